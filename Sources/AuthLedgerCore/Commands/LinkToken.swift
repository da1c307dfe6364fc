/// Email-link tokens (SPEC 11): 256 random bits, base64url, given to the caller once; the
/// log keeps only their keyed hash, which is also the key of the index that finds them.
public enum LinkToken {
    /// The purpose label the server key hashes link tokens under.
    static let purpose = "verification-link"

    /// The token of 32 random bytes (drawn by the log: `LinkToken.random()` in AuthLedger), base64url (43 characters).
    public static func token(_ bytes: [UInt8]) -> String {
        precondition(bytes.count == 32, "a link token is 32 bytes")
        return Base64URL.encode(bytes)
    }

    /// Whether `token` has the shape of a token (43 base64url characters, 32 bytes); anything
    /// else is refused before it is hashed or looked up.
    public static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == 43 && Base64URL.decode(token)?.count == 32
    }

    /// The keyed hash of `token` under the server key (lower-case hex HMAC-SHA-256).
    public static func hash(_ token: String, secrets: OTPSecrets) -> String {
        secrets.keyedDigest(purpose, Array(token.utf8))
    }
}
