/// What kind of device a device is (SPEC 1.3 `kind`).
public enum DeviceKind: String, CaseIterable, Sendable, Codable {
    /// The kinds a device may be.
    case mobile, tablet, desktop, browser, other

    /// The kind named `text`, or `invalid_event` naming `path` (the one check of a `kind`,
    /// for events and commands alike).
    public init(parsing text: String, path: String) throws(LedgerError) {
        guard let k = DeviceKind(rawValue: text) else {
            throw .invalid("\"\(path)\" must be one of \(DeviceKind.allCases.map(\.rawValue).sorted().joined(separator: ", "))", field: path)
        }
        self = k
    }
}
