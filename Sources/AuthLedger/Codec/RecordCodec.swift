import AuthLedgerCore
/// The storage encoding of challenge, OTP and grant records: the same bytes inside a
/// maintained state (`StateCodec`) and as a value of their index (`RecordKind`).
enum RecordCodec {
    static func encode(_ c: ChallengeRecord) -> [UInt8] {
        var w = ByteWriter(capacity: 96)
        w.challenge(c)
        return w.bytes
    }

    static func encode(_ o: OTPRecord) -> [UInt8] {
        var w = ByteWriter(capacity: 128)
        w.otp(o)
        return w.bytes
    }

    static func encode(_ g: GrantRecord) -> [UInt8] {
        var w = ByteWriter(capacity: 64)
        w.grant(g)
        return w.bytes
    }

    static func decodeChallenge(_ bytes: [UInt8]) throws -> ChallengeRecord {
        try bytes.withUnsafeBytes { b in
            var r = ByteReader(b)
            let c = try r.challenge()
            guard r.atEnd else { throw ByteReader.Corrupt() }
            return c
        }
    }

    static func decodeOTP(_ bytes: [UInt8]) throws -> OTPRecord {
        try bytes.withUnsafeBytes { b in
            var r = ByteReader(b)
            let o = try r.otp()
            guard r.atEnd else { throw ByteReader.Corrupt() }
            return o
        }
    }

    static func decodeGrant(_ bytes: [UInt8]) throws -> GrantRecord {
        try bytes.withUnsafeBytes { b in
            var r = ByteReader(b)
            let g = try r.grant()
            guard r.atEnd else { throw ByteReader.Corrupt() }
            return g
        }
    }
}

extension ByteWriter {
    mutating func challenge(_ c: ChallengeRecord) {
        string(c.challengeId); string(c.action); string(c.requestingDeviceId)
        time(c.issuedAt); time(c.expiresAt)
        // Bit 0: a context follows; bit 1: a nonce (SPEC 11) follows it. Records without a
        // nonce keep their bytes.
        u8((c.context == nil ? 0 : 1) | (c.nonce == nil ? 0 : 2))
        if let ctx = c.context { map(ctx) }
        if let nonce = c.nonce { string(nonce) }
        u8(c.requesterWasActive ? 1 : 0); u8(c.resolution.rawValue); optTime(c.resolvedAt)
        optString(c.approverDeviceId)
        u8(c.userVerified == nil ? 2 : (c.userVerified! ? 1 : 0))
        optString(c.usedBy)
    }

    mutating func otp(_ o: OTPRecord) {
        string(o.otpId); string(o.channel); string(o.target); string(o.codeHash)
        time(o.issuedAt); time(o.expiresAt); signed(o.maxAttempts); signed(o.failures)
        u8(o.verified ? 1 : 0)
    }

    mutating func grant(_ g: GrantRecord) {
        string(g.grantId); string(g.otpId); time(g.expiresAt); optString(g.usedBy)
    }
}

extension ByteReader {
    mutating func challenge() throws -> ChallengeRecord {
        let id = try string(), action = try string(), req = try string()
        let issued = try time(), expires = try time()
        let parts = try u8()
        guard parts <= 3 else { throw ByteReader.Corrupt() }
        let ctx: StringMap? = parts & 1 != 0 ? try map() : nil
        let nonce: String? = parts & 2 != 0 ? try string() : nil
        var c = ChallengeRecord(challengeId: id, action: action, requestingDeviceId: req, issuedAt: issued,
                                expiresAt: expires, context: ctx, requesterWasActive: try flag(), nonce: nonce)
        guard let res = ChallengeOutcome(rawValue: try u8()) else { throw ByteReader.Corrupt() }
        c.resolution = res
        c.resolvedAt = try optTime()
        c.approverDeviceId = try optString()
        let uv = try u8()
        c.userVerified = uv == 2 ? nil : uv == 1
        c.usedBy = try optString()
        return c
    }

    mutating func otp() throws -> OTPRecord {
        var o = OTPRecord(otpId: try string(), channel: try string(), target: try string(), codeHash: try string(),
                          issuedAt: try time(), expiresAt: try time(), maxAttempts: try signed())
        o.failures = try signed()
        o.verified = try flag()
        return o
    }

    mutating func grant() throws -> GrantRecord {
        GrantRecord(grantId: try string(), otpId: try string(), expiresAt: try time(), usedBy: try optString())
    }
}
