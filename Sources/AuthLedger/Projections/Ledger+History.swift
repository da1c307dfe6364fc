import AuthLedgerCore
extension Ledger {
    /// The user's events with `seq <= position` and `at <= asOf`, in order, from the first
    /// one after `page.after`, at most `page.limit`. The next page starts after the last
    /// `seq` of this one; a page shorter than its limit is the last. A page costs its own
    /// length plus a logarithmic search of the stream, however long the history.
    public func history(_ user: String, _ o: QueryOptions, page: HistoryPage) async throws -> [RecordedEvent] {
        try await read { r in try Ledger.history(r, user, o, page: page) }
    }

    static func history(_ r: any StorageReader, _ user: String, _ o: QueryOptions, page: HistoryPage) throws -> [RecordedEvent] {
        try EventDecoder.checkUser(user)
        let through = o.position ?? .max
        let limit = page.limit ?? .max
        guard limit > 0 else { return [] }
        let from = try Ledger.firstVersion(r, stream: user, after: page.after)
        var out: [RecordedEvent] = []
        try r.scanStream(user, fromVersion: from) { _, seq in
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

    /// The first version of `stream` whose `seq` is greater than `after`: versions and seqs
    /// grow together, so a galloping then binary search over the stream index finds it.
    static func firstVersion(_ r: any StorageReader, stream: String, after: UInt64) throws -> UInt64 {
        guard after > 0 else { return 1 }
        // Invariant: version `lo` is at or before `after` (0 stands for "before the stream");
        // version `hi` is after it or past the stream's end.
        var lo: UInt64 = 0, hi: UInt64 = 1
        while let s = try r.seq(stream: stream, version: hi), s <= after {
            lo = hi
            hi = hi > UInt64.max / 2 ? UInt64.max : hi * 2
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2
            if let s = try r.seq(stream: stream, version: mid), s <= after { lo = mid } else { hi = mid }
        }
        return lo + 1
    }
}
