/// A link redemption as a caller makes it (CLI `redeem-link`, `POST /v1/verification-links/redeem`):
/// the token in clear, which the ledger hashes and never keeps. Its description hides the token.
public struct LinkRedemptionRequest: Sendable, CustomStringConvertible {
    /// The link token (43 base64url characters).
    public var token: String
    /// A name for the device, used only when its request gave none.
    public var name: String?
    /// A kind for the device, used only when its request gave none.
    public var kind: DeviceKind?
    /// The device's platform, when the request gave none.
    public var platform: String?
    /// The device's push token.
    public var pushToken: String?
    /// The device's public JWK.
    public var publicKey: StringMap?

    /// A request from text; `kind` is checked here.
    public init(token: String, name: String? = nil, kind: String? = nil, platform: String? = nil, pushToken: String? = nil,
                publicKey: StringMap? = nil) throws(LedgerError) {
        self.token = token
        self.name = name
        self.kind = try kind.map { k throws(LedgerError) in try DeviceKind(parsing: k, path: "kind") }
        self.platform = platform
        self.pushToken = pushToken
        self.publicKey = publicKey
    }

    /// The request without its token.
    public var description: String { "LinkRedemptionRequest(token: <redacted>)" }
}
