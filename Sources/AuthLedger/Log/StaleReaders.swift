import AuthLedgerCore
extension Ledger {
    /// Clears reader slots left by processes that died inside a read transaction (LMDB:
    /// `mdb_reader_check`; also done on every open). Returns how many were cleared.
    @discardableResult
    public func clearStaleReaders() throws -> Int {
        guard let lmdb = storage as? LMDBStorage else { return 0 }
        return try lmdb.checkReaders()
    }
}
