import AuthLedgerCore

extension Ledger {
    /// A page of the users at the head (``/AuthLedgerCore/UserPage``): each with its number of events and
    /// its latest event's `seq` and time. A seek in the store's key index and a walk of the
    /// page's keys: the cost of a page does not grow with the number of users.
    public func users(_ page: UserPage) async throws -> UserList {
        var load = ReadLoad()
        // The page's users, the one after them (`next`), `after` itself and `$system`.
        load.statesFrom = (page.start, page.limit + 3)
        return try await read(load) { r in try Ledger.users(r, page) }
    }

    static func users(_ r: any StorageReader, _ page: UserPage) throws -> UserList {
        let head = try r.head()
        var users: [UserSummary] = []
        var more = false
        try r.scanProjectionStates(from: page.start) { key, bytes in
            guard page.matches(key) else { return false }
            // `after` itself, and the `$system` stream's state (not a user's), are left out.
            if !page.includes(key) || key.unicodeScalars.first == "$" { return true }
            guard users.count < page.limit else { more = true; return false }
            let (version, lastAt) = try StateCodec.decodeSummary(bytes)
            guard let seq = try r.seq(stream: key, version: version) else {
                throw LedgerError(.tampered, "the projection of user \(key) names an event its stream does not hold")
            }
            users.append(UserSummary(user: key, events: version, lastSeq: seq, lastAt: lastAt))
            return true
        }
        return UserList(position: head.seq, users: users, next: more ? users.last?.user : nil)
    }
}
