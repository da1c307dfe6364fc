import AuthLedgerCore

/// The storage encoding of maintained projection state.
package enum StateCodec {
    static let format: UInt8 = 1
    /// A user's state with its stream head in front (`StreamHead`): `2 ‖ varint(last) ‖ s_N`,
    /// then the state as in format 1.
    static let formatWithStream: UInt8 = 2

    /// The user's state; with `stream`, its stream head in front (format 2).
    package static func encode(_ s: UserState, stream: StreamHead? = nil) -> [UInt8] {
        var w = ByteWriter(capacity: 256)
        if let stream {
            w.u8(formatWithStream)
            w.varint(stream.last)
            w.raw(stream.hash.bytes)
        } else {
            w.u8(format)
        }
        w.varint(s.version)
        w.optTime(s.lastAt)
        w.u8(s.everRegistered ? 1 : 0)
        w.optTime(s.coolingUntil)
        w.varint(UInt64(s.devices.count))
        for d in s.devices.values {
            w.string(d.deviceId); w.optString(d.name); w.optString(d.kind); w.optString(d.platform)
            w.optString(d.appId); w.optString(d.pushToken); w.optString(d.binding); w.optString(d.via)
            w.u8(d.status.rawValue); w.optTime(d.requestedAt); w.optTime(d.registeredAt)
            w.optTime(d.lastAccessAt); w.optTime(d.revokedAt)
        }
        w.varint(UInt64(s.challenges.count))
        for c in s.challenges.values { w.challenge(c) }
        w.varint(UInt64(s.otps.count))
        for o in s.otps.values { w.otp(o) }
        w.optString(s.latestOtpId)
        w.varint(UInt64(s.otpIssueTimes.count))
        for t in s.otpIssueTimes { w.time(t) }
        w.varint(UInt64(s.grants.count))
        for g in s.grants.values { w.grant(g) }
        // Appended only when set: states written before erasure existed decode unchanged.
        let proofs = DeviceProofsCodec.hasProofs(s)
        if s.erased || proofs { w.u8(s.erased ? 1 : 0) }
        // Then, only when there are any, the device proofs (SPEC 11).
        if proofs { DeviceProofsCodec.encode(s, into: &w) }
        return w.bytes
    }

    package static func decode(_ bytes: UnsafeRawBufferPointer, user: String) throws -> UserState {
        var r = ByteReader(bytes)
        try skipHeader(&r)
        var s = UserState(user: user)
        s.version = try r.varint()
        s.lastAt = try r.optTime()
        s.everRegistered = try r.flag()
        s.coolingUntil = try r.optTime()
        // Dictionaries are sized once: no rehashing while a big state is read.
        let devices = try r.count()
        s.devices.reserveCapacity(devices)
        for _ in 0..<devices {
            var d = DeviceRecord(deviceId: try r.string(), status: .pending)
            d.name = try r.optString(); d.kind = try r.optString(); d.platform = try r.optString()
            d.appId = try r.optString(); d.pushToken = try r.optString(); d.binding = try r.optString(); d.via = try r.optString()
            guard let st = DeviceStatus(rawValue: try r.u8()) else { throw ByteReader.Corrupt() }
            d.status = st
            d.requestedAt = try r.optTime(); d.registeredAt = try r.optTime()
            d.lastAccessAt = try r.optTime(); d.revokedAt = try r.optTime()
            s.devices[d.deviceId] = d
        }
        let challenges = try r.count()
        s.challenges.reserveCapacity(challenges)
        for _ in 0..<challenges {
            let c = try r.challenge()
            s.challenges[c.challengeId] = c
        }
        let otps = try r.count()
        s.otps.reserveCapacity(otps)
        for _ in 0..<otps {
            let o = try r.otp()
            s.otps[o.otpId] = o
        }
        s.latestOtpId = try r.optString()
        for _ in 0..<(try r.varint()) { s.otpIssueTimes.append(try r.time()) }
        let grants = try r.count()
        s.grants.reserveCapacity(grants)
        for _ in 0..<grants {
            let g = try r.grant()
            s.grants[g.grantId] = g
        }
        if !r.atEnd { s.erased = try r.flag() }
        if !r.atEnd { try DeviceProofsCodec.decode(&r, into: &s) }
        guard r.atEnd else { throw ByteReader.Corrupt() }
        return s
    }

    /// The stream version and the latest `at` of a user's state: its first members, read
    /// without the rest.
    package static func decodeSummary(_ bytes: UnsafeRawBufferPointer) throws -> (version: UInt64, lastAt: Timestamp?) {
        var r = ByteReader(bytes)
        try skipHeader(&r)
        return (try r.varint(), try r.optTime())
    }

    /// The stream head stored in front of a user's state (nil: a state written without one,
    /// format 1) and the stream's version (its event count `N`).
    package static func decodeStream(_ bytes: UnsafeRawBufferPointer) throws -> (head: StreamHead?, count: UInt64) {
        var r = ByteReader(bytes)
        let head = try readHeader(&r)
        return (head, try r.varint())
    }

    /// A stored user state with `head` in front (in place of the one it has, if any), the state's bytes kept.
    package static func withStreamHead(_ bytes: [UInt8], _ head: StreamHead) throws -> [UInt8] {
        let body = try bytes.withUnsafeBytes { b -> Int in
            var r = ByteReader(b)
            try skipHeader(&r)
            return r.i
        }
        var w = ByteWriter(capacity: bytes.count + 42)
        w.u8(formatWithStream)
        w.varint(head.last)
        w.raw(head.hash.bytes)
        w.raw(Array(bytes[body...]))
        return w.bytes
    }

    /// Reads the format byte and, in format 2, the stream head.
    private static func readHeader(_ r: inout ByteReader) throws -> StreamHead? {
        switch try r.u8() {
        case format: return nil
        case formatWithStream:
            let last = try r.varint()
            return StreamHead(hash: Hash32(bytes: try r.raw(32)), last: last)
        default: throw ByteReader.Corrupt()
        }
    }

    private static func skipHeader(_ r: inout ByteReader) throws {
        switch try r.u8() {
        case format: return
        case formatWithStream: _ = try r.varint(); try r.skip(32)
        default: throw ByteReader.Corrupt()
        }
    }

    package static func encode(_ s: SystemState) -> [UInt8] {
        var w = ByteWriter(capacity: 64)
        w.u8(format)
        w.varint(s.version)
        w.optTime(s.lastAt)
        let p = s.policy
        for v in [p.coolingSeconds, p.challengeTtlSeconds, p.otpTtlSeconds, p.otpMaxAttempts, p.otpPerHour, p.grantTtlSeconds, p.maxDevices] {
            w.signed(v)
        }
        w.u8(p.protectCurrentDevice ? 1 : 0)
        // SPEC 11's settings, only when one differs from its default: older states keep their bytes.
        let defaults = Policy()
        if p.requireSignedApprovals != defaults.requireSignedApprovals || p.verificationLinkTtlSeconds != defaults.verificationLinkTtlSeconds {
            w.u8(p.requireSignedApprovals ? 1 : 0)
            w.signed(p.verificationLinkTtlSeconds)
        }
        return w.bytes
    }

    package static func decodeSystem(_ bytes: UnsafeRawBufferPointer) throws -> SystemState {
        var r = ByteReader(bytes)
        guard try r.u8() == format else { throw ByteReader.Corrupt() }
        var s = SystemState()
        s.version = try r.varint()
        s.lastAt = try r.optTime()
        s.policy.coolingSeconds = try r.signed()
        s.policy.challengeTtlSeconds = try r.signed()
        s.policy.otpTtlSeconds = try r.signed()
        s.policy.otpMaxAttempts = try r.signed()
        s.policy.otpPerHour = try r.signed()
        s.policy.grantTtlSeconds = try r.signed()
        s.policy.maxDevices = try r.signed()
        s.policy.protectCurrentDevice = try r.flag()
        if !r.atEnd {
            s.policy.requireSignedApprovals = try r.flag()
            s.policy.verificationLinkTtlSeconds = try r.signed()
        }
        return s
    }
}
