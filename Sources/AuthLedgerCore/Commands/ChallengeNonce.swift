/// The nonce of a challenge issued by the command side (SPEC 11): 16 random bytes, base64url.
enum ChallengeNonce {
    static func random() -> String {
        let (a, b) = RandomBits.shared.next2()
        return Base64URL.encode(a.bigEndianBytes8 + b.bigEndianBytes8)
    }
}
