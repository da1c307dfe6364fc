/// What a device signs when it answers a challenge: the JCS (RFC 8785) of
/// `{"challengeId", "decision", "deviceId", "nonce", "user"}`, plus `"userVerified": true`
/// when an approval claims it. A JWS over any other bytes does not prove this answer.
public enum ApprovalStatement {
    /// The bytes a signature over this answer must carry as its payload.
    public static func payload(user: String, challengeId: String, decision: String, deviceId: String, nonce: String,
                               userVerified: Bool?) -> [UInt8] {
        var m: [(String, JSON)] = [("challengeId", .string(challengeId)), ("decision", .string(decision)),
                                   ("deviceId", .string(deviceId)), ("nonce", .string(nonce)), ("user", .string(user))]
        if userVerified == true { m.append(("userVerified", .bool(true))) }
        return JSON.object(m).canonicalBytes()
    }
}
