/// The outcome of a challenge for its owner and auditors (SPEC 3.4 `outcome`).
public enum ChallengeOutcome: UInt8, Sendable {
    /// `pending`: unresolved and not yet at `expiresAt`; `approved` and `denied`: resolved by a device;
    /// `expired`: its time is up, whether or not a `challenge.expired` was recorded.
    case pending = 0, approved = 1, denied = 2, expired = 3
    /// The name answers use: `pending`, `approved`, `denied` or `expired`.
    public var name: String { switch self { case .pending: "pending"; case .approved: "approved"; case .denied: "denied"; case .expired: "expired" } }
}
