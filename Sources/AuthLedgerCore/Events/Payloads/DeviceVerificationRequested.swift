/// `device.verification_requested`: an unrecognised device signed in and waits for verification.
public struct DeviceVerificationRequested: Equatable, Sendable {
    /// The device's id.
    public var deviceId: String
    /// The name it gave; nil when none was given or it was erased.
    public var name: String?
    /// What kind of device it says it is, if it says.
    public var kind: DeviceKind?
    /// The device's platform (`ios`, `android`, `linux`, …), free text.
    public var platform: String?
    /// How the device is verified (`email_link`), when recorded.
    public var channel: VerificationChannel?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(deviceId: String, name: String? = nil, kind: DeviceKind? = nil, platform: String? = nil,
                channel: VerificationChannel? = .emailLink) {
        self.deviceId = deviceId
        self.name = name
        self.kind = kind
        self.platform = platform
        self.channel = channel
    }

    init(_ d: EventData) throws(LedgerError) {
        try self.init(deviceId: d.need(.deviceId, .verificationRequested, EventData.string), name: d.string(.name),
                      kind: d.string(.kind).map { s throws(LedgerError) in try DeviceKind(parsing: s, path: "data.kind") },
                      platform: d.string(.platform),
                      channel: d.string(.channel).map { s throws(LedgerError) in try VerificationChannel(parsing: s, path: "data.channel") })
    }

    var data: EventData {
        EventData([(.channel, .text(channel)), (.deviceId, .text(deviceId)), (.kind, .text(kind)), (.name, .text(name)),
                   (.platform, .text(platform))])
    }
}
