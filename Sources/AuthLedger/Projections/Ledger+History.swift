import AuthLedgerCore
extension Ledger {
    /// The user's events with `seq <= position` and `at <= asOf`, in order, from the first
    /// one after `page.after`, at most `page.limit`. The next page starts after the last
    /// `seq` of this one; a page shorter than its limit is the last. A page costs its own
    /// length plus a logarithmic search of the stream, however long the history.
    public func history(_ user: String, _ o: QueryOptions, page: HistoryPage) async throws -> [RecordedEvent] {
        var load = ReadLoad()
        // (One entry more than the page: the scan stops at the first one past it.)
        load.streamsAfter = [(user, page.after, page.limit.map { $0 == .max ? .max : $0 + 1 } ?? .max)]
        return try await read(load) { r in try Ledger.history(r, user, o, page: page) }
    }

    static func history(_ r: any StorageReader, _ user: String, _ o: QueryOptions, page: HistoryPage) throws -> [RecordedEvent] {
        try EventDecoder.checkUser(user)
        let through = o.position ?? .max
        let limit = page.limit ?? .max
        guard limit > 0 else { return [] }
        var out: [RecordedEvent] = []
        try r.scanStream(user, afterSeq: page.after) { _, seq in
            guard seq <= through, out.count < limit else { return false }
            // With its personal values read back from the values store (SPEC 1.5).
            let e = try r.recordedEvent(at: seq)
            // `at` never decreases within a stream: nothing later is before `asOf` either.
            guard e.event.at <= o.asOf else { return false }
            out.append(e)
            return true
        }
        return out
    }
}
