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
    /// The request's id, unique per user (SPEC 11); what a redeemed link's registration names.
    public var verificationId: String?
    /// The keyed hash of the link token (as `codeHash`), when the command side made one.
    public var linkHash: String?
    /// From this time on the link token is expired.
    public var linkExpiresAt: Timestamp?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(deviceId: String, name: String? = nil, kind: DeviceKind? = nil, platform: String? = nil,
                channel: VerificationChannel? = .emailLink, verificationId: String? = nil, linkHash: String? = nil,
                linkExpiresAt: Timestamp? = nil) {
        self.deviceId = deviceId
        self.name = name
        self.kind = kind
        self.platform = platform
        self.channel = channel
        self.verificationId = verificationId
        self.linkHash = linkHash
        self.linkExpiresAt = linkExpiresAt
    }

    init(_ d: EventData) throws(LedgerError) {
        try self.init(deviceId: d.need(.deviceId, .verificationRequested, EventData.string), name: d.string(.name),
                      kind: d.string(.kind).map { s throws(LedgerError) in try DeviceKind(parsing: s, path: "data.kind") },
                      platform: d.string(.platform),
                      channel: d.string(.channel).map { s throws(LedgerError) in try VerificationChannel(parsing: s, path: "data.channel") },
                      verificationId: d.string(.verificationId), linkHash: d.string(.linkHash), linkExpiresAt: d.time(.linkExpiresAt))
    }

    var data: EventData {
        EventData([(.channel, .text(channel)), (.deviceId, .text(deviceId)), (.kind, .text(kind)),
                   (.linkExpiresAt, linkExpiresAt.map { .time($0) }), (.linkHash, .text(linkHash)), (.name, .text(name)),
                   (.platform, .text(platform)), (.verificationId, .text(verificationId))])
    }
}
