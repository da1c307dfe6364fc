import AuthLedgerCore
extension Ledger {
    /// Clears reader slots left by processes that died inside a read transaction (LMDB:
    /// `mdb_reader_check`; also done on every open). Returns how many were cleared.
    @discardableResult
    public func clearStaleReaders() throws -> Int {
        try (storage as? any ReaderSlots)?.clearStaleReaders() ?? 0
    }
}
