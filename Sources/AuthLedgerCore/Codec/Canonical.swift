import Crypto

/// The JCS (RFC 8785) canonical bytes of a recorded event's hashed form (without `prev`,
/// `hash` and `disclosures`, personal values as their commitments), written straight
/// from the typed event: no JSON tree, no sorting of known keys (events with personal
/// values go through the JSON tree).
///
/// The member order is fixed at compile time: top-level keys in UTF-16 order
/// (`at`, `data`, `id`, `meta`, `seq`, `type`, `user`, `version`), `data` fields in
/// name order (``Field/order``, checked by a test); only the free-form
/// string maps (`meta`, `context`) are sorted at run time. The output is byte for
/// byte what `JSON.object(RecordedEvent.contentMembers(…)).canonicalBytes()` gives.
package enum CanonicalEvent {
    package static let fieldKeys: [[UInt8]] = Field.allCases.reduce(into: [[UInt8]](repeating: [], count: Field.allCases.count + 1)) {
        $0[Int($1.rawValue)] = Array("\"\($1.name)\":".utf8)
    }
    package static let typeValues: [[UInt8]] = {
        var out = [[UInt8]](repeating: [], count: 256)
        for t in EventType.allCases {
            var b: [UInt8] = []
            JSON.writeString(t.name, into: &b)
            out[Int(t.rawValue)] = b
        }
        return out
    }()
    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    static func write(_ e: Event, seq: UInt64, version: UInt64, into out: inout [UInt8]) {
        if let personal = e.personal, personal.hasErased {
            // Values absent from the event (erased, or not read back from the values store, as
            // when the stored bytes are hashed) are hashed as their commitments at their
            // pointers, like the present ones: a stand-in value at each such pointer lets the
            // direct writer put the commitment in its place (SPEC 1.2).
            let present = Set(PersonalData.clearValues(e).map(\.pointer))
            var filled = e
            for entry in personal.entries where !present.contains(entry.pointer) {
                guard PersonalData.insert("", at: entry.pointer, into: &filled) else {
                    // A pointer the writer cannot place: the JSON tree places every pointer.
                    out += JSON.object(RecordedEvent.contentMembers(e, seq: seq, version: version)).canonicalBytes()
                    return
                }
            }
            writeDirect(filled, seq: seq, version: version, into: &out)
            return
        }
        writeDirect(e, seq: seq, version: version, into: &out)
    }

    /// The direct writer: every personal value present in `e`, each written as its commitment.
    private static func writeDirect(_ e: Event, seq: UInt64, version: UInt64, into out: inout [UInt8]) {
        let personal = e.personal
        // Sealed personal values are written as their commitments `{"_sd":"…"}` in place.
        let personalFields = personal == nil ? [] : PersonalData.personalFields(e.type)
        out.append(contentsOf: #"{"at":""#.utf8)
        e.at.writeFormatted(into: &out)
        out.append(contentsOf: #"","data":{"#.utf8)
        var first = true
        for (field, value) in e.data.entries {
            if !first { out.append(44) }
            first = false
            out.append(contentsOf: fieldKeys[Int(field.rawValue)])
            if let personal {
                if personalFields.contains(field), let entry = personal.entry(PersonalData.fieldPointers[Int(field.rawValue)]) {
                    writeCommitment(entry.digest, into: &out)
                    continue
                }
                if field == .context, e.type == .challengeIssued, case let .map(m) = value {
                    writeMap(m, into: &out) { key, _ in personal.entry(PersonalData.contextPrefix + PersonalData.escape(key))?.digest }
                    continue
                }
            }
            switch value {
            case let .string(s): JSON.writeString(s, into: &out)
            case let .time(t): out.append(34); t.writeFormatted(into: &out); out.append(34)
            case let .int(i): writeInt(i, into: &out)
            case let .bool(b): if b { out.append(contentsOf: "true".utf8) } else { out.append(contentsOf: "false".utf8) }
            case let .map(m): writeMap(m, into: &out)
            }
        }
        out.append(contentsOf: #"},"id":""#.utf8)
        writeUUID(e.id!, into: &out)
        out.append(34)
        if let meta = e.meta {
            out.append(contentsOf: #","meta":"#.utf8)
            if let personal {
                writeMap(meta, into: &out) { key, _ in key == "ip" ? personal.entry(PersonalData.metaIP)?.digest : nil }
            } else {
                writeMap(meta, into: &out)
            }
        }
        out.append(contentsOf: #","seq":"#.utf8)
        writeUInt(seq, into: &out)
        out.append(contentsOf: #","type":"#.utf8)
        out.append(contentsOf: typeValues[Int(e.type.rawValue)])
        if let u = e.user {
            out.append(contentsOf: #","user":"#.utf8)
            JSON.writeString(u, into: &out)
        }
        out.append(contentsOf: #","version":"#.utf8)
        writeUInt(version, into: &out)
        out.append(125)
    }

    /// `commitment(key, value)` gives the digest that stands for a personal value.
    static func writeMap(_ m: StringMap, into out: inout [UInt8], commitment: ((String, String) -> String?)? = nil) {
        out.append(123)
        let pairs = m.pairs.count < 2 ? m.pairs : m.pairs.sorted { JSON.utf16Less($0.key, $1.key) }
        for (k, (key, value)) in pairs.enumerated() {
            if k > 0 { out.append(44) }
            JSON.writeString(key, into: &out)
            out.append(58)
            if let d = commitment?(key, value) {
                writeCommitment(d, into: &out)
            } else {
                JSON.writeString(value, into: &out)
            }
        }
        out.append(125)
    }

    /// `{"_sd":"<digest>"}` (the digest is base64url: nothing to escape).
    package static func writeCommitment(_ digest: String, into out: inout [UInt8]) {
        out.append(contentsOf: #"{"_sd":""#.utf8)
        out.append(contentsOf: digest.utf8)
        out.append(contentsOf: #""}"#.utf8)
    }

    package static func writeUInt(_ v: UInt64, into out: inout [UInt8]) {
        if v < 10 { out.append(48 + UInt8(v)); return }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        var n = 0
        var x = v
        withUnsafeMutableBytes(of: &digits) { d in
            while x > 0 { d[23 - n] = 48 + UInt8(x % 10); x /= 10; n += 1 }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: d[(24 - n)...]))
        }
    }

    package static func writeInt(_ v: Int64, into out: inout [UInt8]) {
        if v < 0 {
            out.append(45)
            writeUInt(v.magnitude, into: &out)
        } else {
            writeUInt(UInt64(v), into: &out)
        }
    }

    package static func writeUUID(_ id: EventID, into out: inout [UInt8]) {
        func nibbles(_ v: UInt64, from: Int, to: Int) {
            var k = from
            while k < to { out.append(hex[Int((v >> UInt64(60 - 4 * k)) & 15)]); k += 1 }
        }
        nibbles(id.high, from: 0, to: 8); out.append(45)
        nibbles(id.high, from: 8, to: 12); out.append(45)
        nibbles(id.high, from: 12, to: 16); out.append(45)
        nibbles(id.low, from: 0, to: 4); out.append(45)
        nibbles(id.low, from: 4, to: 16)
    }

    /// `leaf = SHA-256(0x00 ‖ canonical bytes)`.
    static func leaf(_ e: Event, seq: UInt64, version: UInt64) -> SHA256.Digest {
        var buf: [UInt8] = []
        return leaf(e, seq: seq, version: version, scratch: &buf)
    }

    /// `leaf`, writing the canonical bytes into `scratch` (kept by the caller: no buffer per event).
    package static func leaf(_ e: Event, seq: UInt64, version: UInt64, scratch buf: inout [UInt8]) -> SHA256.Digest {
        writeLeafInput(e, seq: seq, version: version, into: &buf)
        return SHA256.hash(data: buf)
    }

    /// `0x00 ‖ C`, what the leaf hashes, written into `buf` (a buffer the caller reuses; the
    /// log's writer hashes it with its own SHA-256).
    package static func writeLeafInput(_ e: Event, seq: UInt64, version: UInt64, into buf: inout [UInt8]) {
        buf.removeAll(keepingCapacity: true)
        buf.reserveCapacity(512)
        buf.append(0)
        write(e, seq: seq, version: version, into: &buf)
    }
}

extension Timestamp {
    /// Appends `YYYY-MM-DDTHH:MM:SS.sssZ` (the same text as `formatted`).
    package func writeFormatted(into out: inout [UInt8]) {
        let ms = milliseconds
        var days = ms / 86_400_000
        var rem = ms % 86_400_000
        if rem < 0 { rem += 86_400_000; days -= 1 }
        let (y, m, d) = Timestamp.civil(fromDays: days)
        let h = rem / 3_600_000, mi = (rem / 60_000) % 60, s = (rem / 1000) % 60, f = rem % 1000
        @inline(__always) func put2(_ v: Int64) { out.append(48 + UInt8(v / 10)); out.append(48 + UInt8(v % 10)) }
        out.append(48 + UInt8(y / 1000 % 10)); out.append(48 + UInt8(y / 100 % 10)); put2(y % 100)
        out.append(45); put2(m); out.append(45); put2(d); out.append(84)
        put2(h); out.append(58); put2(mi); out.append(58); put2(s); out.append(46)
        out.append(48 + UInt8(f / 100)); put2(f % 100); out.append(90)
    }
}
