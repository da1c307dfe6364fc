import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An LMDB failure, with the C return code kept so callers can tell them apart.
public struct LMDBError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let operation: String

    public var description: String {
        "lmdb \(operation): \(String(cString: mdb_strerror(code))) (\(code))"
    }

    public var isMapFull: Bool { code == MDB_MAP_FULL }
    public var isMapResized: Bool { code == MDB_MAP_RESIZED }

    @inline(__always)
    static func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
        if rc != 0 { throw LMDBError(code: rc, operation: operation()) }
    }
}
