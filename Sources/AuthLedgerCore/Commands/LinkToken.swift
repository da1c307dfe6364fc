/// Email-link tokens (SPEC 11): 256 random bits, base64url, given to the caller once; the
/// log keeps only their keyed hash, which is also the key of the index that finds them.
public enum LinkToken {
    /// The purpose label the server key hashes link tokens under.
    static let purpose = "verification-link"

    /// A fresh token: 32 bytes from the system CSPRNG, base64url (43 characters).
    public static func random() -> String {
        var bytes: [UInt8] = []
        for _ in 0..<2 {
            let (a, b) = RandomBits.shared.next2()
            bytes += a.bigEndianBytes8 + b.bigEndianBytes8
        }
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
