import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A named database inside an environment (an `MDB_dbi`).
public struct Database: Sendable, Hashable {
    public let handle: MDB_dbi
}
