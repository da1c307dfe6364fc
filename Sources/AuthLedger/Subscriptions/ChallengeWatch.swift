import AuthLedgerCore
/// An unresolved challenge: what a sweeper needs to expire it on time.
public struct UnresolvedChallenge: Sendable, Hashable {
    /// The user whose challenge it is.
    public var user: String
    /// The challenge's id.
    public var challengeId: String
    /// When its `challenge.expired` becomes due.
    public var expiresAt: Timestamp

    /// A challenge to watch.
    public init(user: String, challengeId: String, expiresAt: Timestamp) {
        self.user = user
        self.challengeId = challengeId
        self.expiresAt = expiresAt
    }
}

extension Ledger {
    /// Every challenge with no recorded resolution (expired or not), and the position
    /// the list reflects — read in one snapshot, so a follower of the feed from
    /// `position + 1` misses nothing.
    public func unresolvedChallenges() async throws -> (position: UInt64, challenges: [UnresolvedChallenge]) {
        var load = ReadLoad()
        load.allStates = true
        return try await read(load, Ledger.unresolvedChallenges)
    }

    static func unresolvedChallenges(_ r: any StorageReader) throws -> (position: UInt64, challenges: [UnresolvedChallenge]) {
        let head = try r.head().seq
        var out: [UnresolvedChallenge] = []
        try r.scanProjectionStates { key, bytes in
            guard key != systemStream, let s = try? StateCodec.decode(bytes, user: key) else { return true }
            for c in s.challenges.values where c.resolution == .pending {
                out.append(UnresolvedChallenge(user: key, challengeId: c.challengeId, expiresAt: c.expiresAt))
            }
            return true
        }
        return (head, out)
    }
}
