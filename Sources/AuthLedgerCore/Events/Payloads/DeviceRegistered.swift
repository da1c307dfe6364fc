/// `device.registered`: a device was trusted, `via` saying how and with what proof.
public struct DeviceRegistered: Equatable, Sendable {
    /// The device's id.
    public var deviceId: String
    /// The device's name; nil once erased (SPEC 1.5).
    public var name: String?
    /// What kind of device it is.
    public var kind: DeviceKind
    /// The device's platform (`ios`, `android`, `linux`, …), free text.
    public var platform: String?
    /// The app's id on the device, free text.
    public var appId: String?
    /// An authenticator's push token; nil when none was given or it was erased.
    public var pushToken: String?
    /// How long the registration is meant to last.
    public var binding: Binding
    /// How it came to be trusted, with the proof that names.
    public var via: Via
    /// The device's public JWK (SPEC 11), when it has a key.
    public var publicKey: StringMap?
    /// The verification request a link redemption completed (`via: email_link`).
    public var verificationId: String?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(deviceId: String, name: String?, kind: DeviceKind, platform: String? = nil, appId: String? = nil,
                pushToken: String? = nil, binding: Binding, via: Via, publicKey: StringMap? = nil, verificationId: String? = nil) {
        self.deviceId = deviceId
        self.name = name
        self.kind = kind
        self.platform = platform
        self.appId = appId
        self.pushToken = pushToken
        self.binding = binding
        self.via = via
        self.publicKey = publicKey
        self.verificationId = verificationId
    }

    init(_ d: EventData) throws(LedgerError) {
        let t = EventType.registered
        try self.init(deviceId: d.need(.deviceId, t, EventData.string), name: d.string(.name),
                      kind: DeviceKind(parsing: d.need(.kind, t, EventData.string), path: "data.kind"),
                      platform: d.string(.platform), appId: d.string(.appId), pushToken: d.string(.pushToken),
                      binding: Binding(parsing: d.need(.binding, t, EventData.string), path: "data.binding"),
                      via: Via(name: d.need(.via, t, EventData.string), grantId: d.string(.grantId),
                               challengeId: d.string(.challengeId), prefix: "data."),
                      publicKey: d.map(.publicKey), verificationId: d.string(.verificationId))
    }

    var data: EventData {
        EventData([(.appId, .text(appId)), (.binding, .text(binding)), (.challengeId, .text(via.challengeId)),
                   (.deviceId, .text(deviceId)), (.grantId, .text(via.grantId)), (.kind, .text(kind)), (.name, .text(name)),
                   (.platform, .text(platform)), (.publicKey, publicKey.map { .map($0) }), (.pushToken, .text(pushToken)),
                   (.verificationId, .text(verificationId)), (.via, .text(via.name))])
    }
}
