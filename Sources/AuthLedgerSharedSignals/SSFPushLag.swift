import AuthLedger

extension SharedSignals {
    /// How far behind the log each enabled push stream's delivery is: `head` minus the
    /// stream's durable checkpoint (events, written at most every `checkpointInterval`),
    /// by stream id.
    public func pushLags(head: UInt64) async throws -> [String: UInt64] {
        var out: [String: UInt64] = [:]
        for s in try await store.all() where s.method == .push && s.status == .enabled {
            out[s.id] = head > s.cursor ? head - s.cursor : 0
        }
        return out
    }
}
