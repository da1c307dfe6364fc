/// What the answers of reference section 3 select from a `UserState`: the listed devices
/// and the pending challenges, in their order (the answer types ``DeviceList``,
/// ``CoolingAnswer``, ``PendingChallenge`` and ``ChallengeView`` are built from them).
public enum Views {
    /// The devices the `devices` answer lists: revoked ones only with `includeRevoked`; ordered by
    /// registration time (request time while never registered), then id.
    public static func listedDevices(_ s: UserState, includeRevoked: Bool) -> [DeviceRecord] {
        s.devices.values
            .filter { includeRevoked || $0.status != .revoked }
            .sorted { ($0.sortTime, $0.deviceId) < ($1.sortTime, $1.deviceId) }
    }

    /// `"erased": true` on every answer about a user whose personal values were erased (reference 3, 1.5).
    static func erasedMember(_ erased: Bool) -> [(String, JSON)] { erased ? [("erased", .bool(true))] : [] }

    /// The challenges pending at `asOf`, ordered by `issuedAt`, then id.
    public static func pendingChallenges(_ s: UserState, asOf: Timestamp) -> [ChallengeRecord] {
        s.challenges.values
            .filter { $0.outcome(at: asOf) == .pending }
            .sorted { ($0.issuedAt, $0.challengeId) < ($1.issuedAt, $1.challengeId) }
    }
}
