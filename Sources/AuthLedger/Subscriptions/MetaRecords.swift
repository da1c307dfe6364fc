import AuthLedgerCore
/// Small durable records beside the log, for features built over the ledger (the
/// Shared Signals streams and their delivery checkpoints): values in the ledger's
/// `meta` database under a key prefix of their own, read in a snapshot and changed
/// through the writer thread, so a change commits durably (or not at all) like an
/// append, and never interleaves with another change of the same records.
///
/// Keys used so far: `subscription/<name>` (durable subscriptions), `ssf/…` (Shared Signals).
extension Ledger {
    /// The stored value of `key`, or nil.
    public func metaRecord(_ key: String) async throws -> [UInt8]? {
        try await read(ReadLoad(meta: [key])) { r in try r.metaValue(key) }
    }

    /// Runs `body` inside one write transaction of the writer thread: it reads values
    /// with `get` and stores (or, with nil, deletes) them with `put`. A `LedgerError`
    /// thrown by `body` undoes its writes and fails only this call. `get` reads only the
    /// keys named in `reading` (loaded with the transaction's other reads; another key is
    /// refused on PostgreSQL, whose group reads nothing it did not name).
    public func updateMetaRecords<T: Sendable>(
        reading keys: [String] = [],
        _ body: @escaping @Sendable (_ get: (String) throws -> [UInt8]?, _ put: (String, [UInt8]?) throws -> Void) throws -> T
    ) async throws -> T {
        try await onWriter(meta: keys) { session in
            try body({ key in try session.w.metaValue(key) }, { key, value in try session.w.putMetaValue(key, value) })
        }
    }
}
