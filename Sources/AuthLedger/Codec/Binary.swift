import AuthLedgerCore
/// Appends the compact binary storage encoding: LEB128 varints, zig-zag for signed
/// values, length-prefixed UTF-8 strings.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 128) { bytes.reserveCapacity(capacity) }

    @inline(__always) mutating func u8(_ v: UInt8) { bytes.append(v) }

    @inline(__always) mutating func varint(_ v: UInt64) {
        var x = v
        while x >= 0x80 { bytes.append(UInt8(x & 0x7F) | 0x80); x >>= 7 }
        bytes.append(UInt8(x))
    }

    @inline(__always) mutating func signed(_ v: Int64) { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }

    @inline(__always) mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            varint(UInt64(buf.count))
            bytes.append(contentsOf: buf)
        }
    }

    mutating func optString(_ s: String?) {
        if let s { u8(1); string(s) } else { u8(0) }
    }

    mutating func time(_ t: Timestamp) { signed(t.milliseconds) }

    mutating func optTime(_ t: Timestamp?) {
        if let t { u8(1); time(t) } else { u8(0) }
    }

    mutating func raw(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    mutating func map(_ m: StringMap) {
        varint(UInt64(m.pairs.count))
        for (k, v) in m.pairs { string(k); string(v) }
    }
}

/// Reads what `ByteWriter` wrote; every read is bounds-checked (storage may be corrupt).
struct ByteReader {
    let base: UnsafeRawBufferPointer
    var i = 0

    init(_ base: UnsafeRawBufferPointer) { self.base = base }

    struct Corrupt: Error {}

    @inline(__always) mutating func u8() throws -> UInt8 {
        guard i < base.count else { throw Corrupt() }
        defer { i += 1 }
        return base[i]
    }

    /// A presence flag or a boolean: exactly 0 or 1. Any other byte is corrupt, so that
    /// every stored value has one encoding and a flipped flag byte cannot decode to the
    /// same event (verify names it instead of passing it).
    @inline(__always) mutating func flag() throws -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        default: throw Corrupt()
        }
    }

    @inline(__always) mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard i < base.count, shift < 64 else { throw Corrupt() }
            let b = base[i]
            i += 1
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
    }

    @inline(__always) mutating func signed() throws -> Int64 {
        let u = try varint()
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    /// A length or count that fits in what is left of the input (a corrupt varint may hold any
    /// 64-bit value: converting it to `Int` unchecked, or adding it to the offset, would trap).
    @inline(__always) mutating func length() throws -> Int {
        let v = try varint()
        guard v <= UInt64(base.count - i) else { throw Corrupt() }
        return Int(v)
    }

    mutating func string() throws -> String {
        let n = try length()
        defer { i += n }
        let bytes = UnsafeRawBufferPointer(rebasing: base[i..<(i + n)])
        // ASCII (ids, names, times: nearly everything) needs no validation beyond the
        // high bit; the generic validating initialiser was a tenth of replay's time.
        var high: UInt8 = 0
        for b in bytes { high |= b }
        if high < 0x80 { return String(decoding: bytes, as: UTF8.self) }
        guard let s = String(validating: bytes, as: UTF8.self) else { throw Corrupt() }
        return s
    }

    /// A count of following items, each at least one byte long.
    mutating func count() throws -> Int { try length() }

    mutating func skip(_ n: Int) throws {
        guard i + n <= base.count else { throw Corrupt() }
        i += n
    }

    mutating func bigEndianUInt64() throws -> UInt64 {
        guard i + 8 <= base.count else { throw Corrupt() }
        defer { i += 8 }
        return base.loadUnaligned(fromByteOffset: i, as: UInt64.self).bigEndian
    }

    mutating func optString() throws -> String? { try flag() ? try string() : nil }
    /// A time in the range RFC 3339 can write (formatting one outside it would trap).
    mutating func time() throws -> Timestamp {
        let ms = try signed()
        guard ms >= Timestamp.min.milliseconds, ms <= Timestamp.max.milliseconds else { throw Corrupt() }
        return Timestamp(milliseconds: ms)
    }
    mutating func optTime() throws -> Timestamp? { try flag() ? try time() : nil }

    mutating func raw(_ n: Int) throws -> [UInt8] {
        guard n <= base.count - i else { throw Corrupt() }
        defer { i += n }
        return Array(base[i..<(i + n)])
    }

    mutating func map() throws -> StringMap {
        let n = try length()
        guard n <= 1024 else { throw Corrupt() }
        var m = StringMap()
        m.pairs.reserveCapacity(n)
        for _ in 0..<n { m.pairs.append((try string(), try string())) }
        return m
    }

    var atEnd: Bool { i == base.count }
}

/// The storage encoding of recorded events. Versioned by its first byte so the
/// format can evolve; canonical JSON is produced only for hashing and export.
public enum EventCodec {
    static let format: UInt8 = 1

    /// Format 2: an event with personal values. Its bytes hold the event without them
    /// and, after the data, each value's pointer and commitment digest; the values and
    /// salts live in the values store (`PersonalCodec`), so erasing them leaves these bytes.
    static let personalFormat: UInt8 = 2

    /// The bytes the store keeps for `r`: personal values are left out (they are stored apart), so erasing them leaves these bytes unchanged.
    public static func encode(_ r: RecordedEvent) -> [UInt8] {
        var w = ByteWriter(capacity: 160)
        let e = r.event.personal == nil ? r.event : PersonalData.withoutValues(r.event)
        w.u8(e.personal == nil ? format : personalFormat)
        w.u8(e.type.rawValue)
        w.raw(r.prev.bytes)
        w.raw(r.hash.bytes)
        w.raw(e.id!.bytes)
        w.varint(r.version)
        w.time(e.at)
        w.string(e.user ?? "")
        if let meta = e.meta { w.u8(1); w.map(meta) } else { w.u8(0) }
        w.varint(UInt64(e.data.entries.count))
        for (field, value) in e.data.entries {
            w.u8(field.rawValue)
            switch value {
            case let .string(s): w.string(s)
            case let .time(t): w.time(t)
            case let .int(v): w.signed(v)
            case let .bool(b): w.u8(b ? 1 : 0)
            case let .map(m): w.map(m)
            }
        }
        if let p = e.personal {
            w.varint(UInt64(p.entries.count))
            for entry in p.entries { w.string(entry.pointer); w.string(entry.digest) }
        }
        return w.bytes
    }

    /// Decodes a stored event; throws `tampered` when the bytes are not a valid encoding.
    public static func decode(_ bytes: UnsafeRawBufferPointer, seq: UInt64) throws(LedgerError) -> RecordedEvent {
        do {
            var r = ByteReader(bytes)
            let f = try r.u8()
            guard seq <= UInt64(Int64.max), f == format || f == personalFormat, let type = EventType(rawValue: try r.u8()) else { throw ByteReader.Corrupt() }
            let prev = Hash32(bytes: try r.raw(32))
            let hash = Hash32(bytes: try r.raw(32))
            let (event, version) = try body(&r, type: type, personal: f == personalFormat)
            return RecordedEvent(event: event, seq: seq, version: version, prev: prev, hash: hash)
        } catch {
            throw LedgerError(.tampered, "stored event is not decodable", seq: seq)
        }
    }

    /// A hash of the stream key of a stored event, read without decoding it: 0 for
    /// the `$system` stream (empty user), never 0 otherwise; nil when malformed.
    static func streamHash(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        var r = ByteReader(bytes)
        guard let f = try? r.u8(), f == format || f == personalFormat, (try? r.skip(1 + 64 + 16)) != nil,
              (try? r.varint()) != nil, (try? r.varint()) != nil, let n = try? r.count(), r.i + n <= bytes.count
        else { return nil }
        if n == 0 { return 0 }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for k in r.i..<(r.i + n) { h = (h ^ UInt64(bytes[k])) &* 0x100_0000_01b3 }
        return h | 1 << 63
    }

    /// Decodes the event and its stream version only, skipping the chain (replay
    /// needs neither `prev` nor `hash`: two allocations fewer per event).
    static func decodeEvent(_ bytes: UnsafeRawBufferPointer, seq: UInt64) throws(LedgerError) -> (event: Event, version: UInt64) {
        do {
            var r = ByteReader(bytes)
            let f = try r.u8()
            guard f == format || f == personalFormat, let type = EventType(rawValue: try r.u8()) else { throw ByteReader.Corrupt() }
            try r.skip(64)
            return try body(&r, type: type, personal: f == personalFormat)
        } catch {
            throw LedgerError(.tampered, "stored event is not decodable", seq: seq)
        }
    }

    private static func body(_ r: inout ByteReader, type: EventType, personal: Bool) throws -> (Event, UInt64) {
        let id = EventID(high: try r.bigEndianUInt64(), low: try r.bigEndianUInt64())
        // Positions are written as JSON integers (Int64) when hashed and exported.
        let version = try r.varint()
        guard version >= 1, version <= UInt64(Int64.max) else { throw ByteReader.Corrupt() }
        let at = try r.time()
        let user = try r.string()
        let meta: StringMap? = try r.flag() ? try r.map() : nil
        let n = try r.length()
        guard n <= 64 else { throw ByteReader.Corrupt() }
        var data = EventData()
        data.reserve(n)
        for _ in 0..<n {
            guard let field = Field(rawValue: try r.u8()) else { throw ByteReader.Corrupt() }
            let value: FieldValue
            switch field.kind {
            case .string, .id: value = .string(try r.string())
            case .time: value = .time(try r.time())
            case .int: value = .int(try r.signed())
            case .bool: value = .bool(try r.flag())
            case .map: value = .map(try r.map())
            }
            data.appendInOrder(field, value)
        }
        var values: PersonalValues?
        if personal {
            let n = try r.count()
            guard n >= 1, n <= 64 else { throw ByteReader.Corrupt() }
            var entries: [PersonalEntry] = []
            entries.reserveCapacity(n)
            for _ in 0..<n {
                let pointer = try r.string(), digest = try r.string()
                guard PersonalData.isPersonalPointer(pointer, type: type), PersonalData.isDigest(digest) else { throw ByteReader.Corrupt() }
                entries.append(PersonalEntry(pointer: pointer, digest: digest, salt: nil))
            }
            values = PersonalValues(entries)
        }
        let event = Event(id: id, type: type, user: user.isEmpty ? nil : user, at: at, data: data, meta: meta, personal: values)
        // The stored bytes of an event with commitments hold none of its values, and each
        // commitment has a place to go (a context, a meta object).
        if personal {
            guard PersonalData.clearValues(event).isEmpty, !user.isEmpty,
                  Set(values!.entries.map(\.pointer)).count == values!.entries.count else { throw ByteReader.Corrupt() }
            for entry in values!.entries {
                if entry.pointer.hasPrefix(PersonalData.contextPrefix) { guard data[.context] != nil else { throw ByteReader.Corrupt() } }
                if entry.pointer == PersonalData.metaIP { guard meta != nil else { throw ByteReader.Corrupt() } }
            }
        }
        guard r.atEnd else { throw ByteReader.Corrupt() }
        return (event, version)
    }
}

/// The storage encoding of maintained projection state.
enum StateCodec {
    static let format: UInt8 = 1

    static func encode(_ s: UserState) -> [UInt8] {
        var w = ByteWriter(capacity: 256)
        w.u8(format)
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
        if s.erased { w.u8(1) }
        return w.bytes
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, user: String) throws -> UserState {
        var r = ByteReader(bytes)
        guard try r.u8() == format else { throw ByteReader.Corrupt() }
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
        guard r.atEnd else { throw ByteReader.Corrupt() }
        return s
    }

    static func encode(_ s: SystemState) -> [UInt8] {
        var w = ByteWriter(capacity: 64)
        w.u8(format)
        w.varint(s.version)
        w.optTime(s.lastAt)
        let p = s.policy
        for v in [p.coolingSeconds, p.challengeTtlSeconds, p.otpTtlSeconds, p.otpMaxAttempts, p.otpPerHour, p.grantTtlSeconds, p.maxDevices] {
            w.signed(v)
        }
        w.u8(p.protectCurrentDevice ? 1 : 0)
        return w.bytes
    }

    static func decodeSystem(_ bytes: UnsafeRawBufferPointer) throws -> SystemState {
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
        return s
    }
}
