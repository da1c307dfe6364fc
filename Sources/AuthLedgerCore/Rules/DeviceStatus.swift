/// Where a device stands in its user's stream (SPEC 3.1 `status`).
public enum DeviceStatus: UInt8, Sendable {
    /// `pending`: a `device.verification_requested` was recorded and the device is not yet registered;
    /// `active`: registered and not revoked; `revoked`: revoked, for good (a revoked device stays revoked).
    case pending = 0, active = 1, revoked = 2
    /// The name answers use: `pending`, `active` or `revoked`.
    public var name: String { switch self { case .pending: "pending"; case .active: "active"; case .revoked: "revoked" } }
}
