/// `device.key_rotated`: an active device's key is replaced; `signature` is a compact JWS by
/// the old key whose payload is the new key's RFC 7638 thumbprint (base64url, as ASCII).
public struct DeviceKeyRotated: Equatable, Sendable {
    /// The device's id.
    public var deviceId: String
    /// The new public JWK.
    public var publicKey: StringMap
    /// The old key's compact JWS over the new key's thumbprint.
    public var signature: String

    /// A payload with these fields; nothing is checked until it is appended.
    public init(deviceId: String, publicKey: StringMap, signature: String) {
        self.deviceId = deviceId
        self.publicKey = publicKey
        self.signature = signature
    }

    init(_ d: EventData) throws(LedgerError) {
        let t = EventType.keyRotated
        try self.init(deviceId: d.need(.deviceId, t, EventData.string), publicKey: d.need(.publicKey, t, EventData.map),
                      signature: d.need(.signature, t, EventData.string))
    }

    var data: EventData {
        EventData([(.deviceId, .text(deviceId)), (.publicKey, .map(publicKey)), (.signature, .text(signature))])
    }
}
