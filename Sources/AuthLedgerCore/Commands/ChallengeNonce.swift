/// The nonce of a challenge issued by the command side (SPEC 11): 16 random bytes (drawn by
/// the log, `DecisionDraws`), base64url.
package enum ChallengeNonce {
    package static func nonce(_ bits: (UInt64, UInt64)) -> String {
        Base64URL.encode(bits.0.bigEndianBytes8 + bits.1.bigEndianBytes8)
    }
}
