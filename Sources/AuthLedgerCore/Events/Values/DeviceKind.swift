/// What kind of device a device is (SPEC 1.3 `kind`).
public enum DeviceKind: String, NamedValue, Sendable, Codable {
    /// The kinds a device may be.
    case mobile, tablet, desktop, browser, other
}
