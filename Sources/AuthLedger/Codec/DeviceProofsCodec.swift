import AuthLedgerCore

/// The storage encoding of the device-proof part of a user's state (SPEC 11): each device's
/// key and pending link, and the user's verification ids. Written after the rest of the
/// state and only when there is something to write, so states without proofs keep their bytes.
enum DeviceProofsCodec {
    static func hasProofs(_ s: UserState) -> Bool {
        !s.verificationIds.isEmpty || s.devices.values.contains(where: hasProofs)
    }

    private static func hasProofs(_ d: DeviceRecord) -> Bool {
        d.publicKey != nil || d.verificationId != nil || d.linkHash != nil || d.linkExpiresAt != nil
    }

    static func encode(_ s: UserState, into w: inout ByteWriter) {
        let devices = s.devices.values.filter(hasProofs)
        w.varint(UInt64(devices.count))
        for d in devices {
            w.string(d.deviceId)
            if let k = d.publicKey { w.u8(1); w.map(k.jwk) } else { w.u8(0) }
            w.optString(d.verificationId); w.optString(d.linkHash); w.optTime(d.linkExpiresAt)
        }
        w.varint(UInt64(s.verificationIds.count))
        for v in s.verificationIds.sorted() { w.string(v) }
    }

    static func decode(_ r: inout ByteReader, into s: inout UserState) throws {
        for _ in 0..<(try r.count()) {
            let id = try r.string()
            guard s.devices[id] != nil else { throw ByteReader.Corrupt() }
            if try r.flag() {
                guard let key = try? DeviceKey(recorded: try r.map()) else { throw ByteReader.Corrupt() }
                s.devices[id]!.publicKey = key
            }
            s.devices[id]!.verificationId = try r.optString()
            s.devices[id]!.linkHash = try r.optString()
            s.devices[id]!.linkExpiresAt = try r.optTime()
            // The live links of a maintained state are its devices' (``UserState/compacted()``).
            if let h = s.devices[id]!.linkHash, let vid = s.devices[id]!.verificationId { s.links[h] = vid }
        }
        for _ in 0..<(try r.count()) { s.verificationIds.insert(try r.string()) }
    }
}
