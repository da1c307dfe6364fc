/// What a `rotateKey` command says: device `deviceId` replaces its key, signed by the old one.
public struct KeyRotation: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The device it is about.
    public var deviceId: String
    /// The new public JWK.
    public var publicKey: StringMap
    /// The old key's compact JWS over the new key's RFC 7638 thumbprint.
    public var signature: String

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, deviceId: String, publicKey: StringMap, signature: String) {
        self.user = user
        self.deviceId = deviceId
        self.publicKey = publicKey
        self.signature = signature
    }
}
