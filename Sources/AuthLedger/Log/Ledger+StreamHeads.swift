import AuthLedgerCore

extension Ledger {
    /// The stored head of `user`'s stream (section 14): its event count `N`, `s_N` and the
    /// seq of the newest event; count 0 and the start head for a user without events, and
    /// a nil head for a state stored without one.
    package func streamHead(of user: String) async throws -> (count: UInt64, head: StreamHead?) {
        try await read(ReadLoad(states: [user])) { r in try Ledger.storedStreamHead(r, user) }
    }

    static func storedStreamHead(_ r: any StorageReader, _ user: String) throws -> (count: UInt64, head: StreamHead?) {
        guard let bytes = try r.projectionState(user) else { return (0, .start) }
        let (head, count) = try bytes.withUnsafeBytes { try StateCodec.decodeStream($0) }
        return (count, head)
    }
}
