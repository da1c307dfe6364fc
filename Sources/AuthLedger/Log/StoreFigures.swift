/// The size of a ledger's store, for monitoring (`/metrics`): what the driver can tell.
public struct StoreFigures: Sendable, Equatable {
    /// Bytes of the store's file on disk (LMDB: `data.mdb`).
    public var fileBytes: Int64
    /// Bytes of the file in use (LMDB: up to the last page written).
    public var usedBytes: Int64
    /// The size the store may use before it must grow (LMDB: the memory map); nil when
    /// the driver has no such bound.
    public var mapBytes: Int64?

    /// Figures as a driver reports them.
    public init(fileBytes: Int64, usedBytes: Int64, mapBytes: Int64?) {
        self.fileBytes = fileBytes
        self.usedBytes = usedBytes
        self.mapBytes = mapBytes
    }
}

/// A store that can tell its size (the LMDB driver).
package protocol StoreFiguresReporting {
    /// The store's figures now (nil when they cannot be read).
    func storeFigures() -> StoreFigures?
}

extension Ledger {
    /// The store's size now, when its driver reports one (LMDB; nil for PostgreSQL).
    public func storeFigures() -> StoreFigures? {
        (storage as? any StoreFiguresReporting)?.storeFigures()
    }
}
