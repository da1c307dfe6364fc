/// What a `redeemLink` command says: the holder of a verification link registers its device.
/// It carries the keyed hash of the token, never the token (the ledger hashes it first).
public struct LinkRedemption: Sendable, Equatable {
    /// The user the link's request belongs to (found by the link hash's index).
    public var user: String
    /// The keyed hash of the redeemed token.
    public var linkHash: String
    /// A name for the device, used only when its request gave none.
    public var name: String?
    /// A kind for the device, used only when its request gave none (else `other`).
    public var kind: DeviceKind?
    /// The device's platform, when the request gave none.
    public var platform: String?
    /// The device's push token.
    public var pushToken: String?
    /// The device's public JWK.
    public var publicKey: StringMap?

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, linkHash: String, name: String? = nil, kind: DeviceKind? = nil, platform: String? = nil,
                pushToken: String? = nil, publicKey: StringMap? = nil) {
        self.user = user
        self.linkHash = linkHash
        self.name = name
        self.kind = kind
        self.platform = platform
        self.pushToken = pushToken
        self.publicKey = publicKey
    }
}
