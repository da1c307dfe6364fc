import Crypto

/// Salted commitments of personal values (SPEC 1.5), the SD-JWT disclosure digest over
/// `[salt, value]`, and where the personal values of each event type are.
public enum PersonalData {
    /// Stands in UserState for a value that was erased where the record still needs to
    /// know one was there (an enrolled push token, a context key). NUL never occurs in a
    /// value: input with control characters is refused.
    public static let erasedMarker = "\u{0}"

    static let dataPrefix = "/data/"
    package static let contextPrefix = "/data/context/"
    package static let metaIP = "/meta/ip"

    /// The `data` fields of `type` that hold one personal string each.
    package static func personalFields(_ type: EventType) -> [Field] { fieldsByType[Int(type.rawValue)] }

    // Built once: these run for every appended event.
    private static let fieldsByType: [[Field]] = (0...255).map { raw in
        switch EventType(rawValue: UInt8(raw)) {
        case .verificationRequested?, .renamed?: [.name]
        case .registered?: [.name, .pushToken]
        case .pushTokenUpdated?: [.pushToken]
        case .otpIssued?: [.target]
        default: []
        }
    }

    /// `/data/<field>` of each field, by tag.
    static let fieldPointers: [String] = (0...255).map { raw in Field(rawValue: UInt8(raw)).map { dataPrefix + $0.name } ?? "" }

    static func isPersonal(_ field: Field, in type: EventType) -> Bool {
        personalFields(type).contains(field) || (field == .context && type == .challengeIssued)
    }

    /// RFC 6901 escaping of one reference token.
    static func escape(_ token: String) -> String {
        if !token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) { return token }
        var out = ""
        for c in token {
            switch c {
            case "~": out += "~0"
            case "/": out += "~1"
            default: out.append(c)
            }
        }
        return out
    }

    static func unescape(_ token: String) -> String {
        var out = ""
        var tilde = false
        for c in token {
            if tilde {
                out += c == "1" ? "/" : c == "0" ? "~" : "~" + String(c)
                tilde = false
            } else if c == "~" {
                tilde = true
            } else {
                out.append(c)
            }
        }
        if tilde { out += "~" }
        return out
    }

    /// The personal values present in clear in `e`, with their pointers.
    package static func clearValues(_ e: Event) -> [(pointer: String, value: String)] {
        let fields = personalFields(e.type)
        let ip = e.meta?["ip"]
        if fields.isEmpty && e.type != .challengeIssued && ip == nil { return [] }
        var out: [(pointer: String, value: String)] = []
        for field in fields {
            if let v = e.data.string(field) { out.append((fieldPointers[Int(field.rawValue)], v)) }
        }
        if e.type == .challengeIssued, let ctx = e.data.map(.context) {
            for (k, v) in ctx.pairs { out.append((contextPrefix + escape(k), v)) }
        }
        if let ip { out.append((metaIP, ip)) }
        return out
    }

    /// Whether `pointer` can address a personal value of an event of `type`.
    package static func isPersonalPointer(_ pointer: String, type: EventType) -> Bool {
        if pointer == metaIP { return true }
        if type == .challengeIssued, pointer.hasPrefix(contextPrefix) { return true }
        return personalFields(type).contains { fieldPointers[Int($0.rawValue)] == pointer }
    }

    /// Whether `e` holds a personal value in clear (`clearValues` is not empty), without listing them.
    package static func hasClearValues(_ e: Event) -> Bool {
        if e.meta?["ip"] != nil { return true }
        if e.type == .challengeIssued, let ctx = e.data.map(.context), !ctx.pairs.isEmpty { return true }
        return personalFields(e.type).contains { e.data.string($0) != nil }
    }

    // MARK: Commitments

    /// `base64url(SHA-256(UTF-8(JCS([salt, value]))))`.
    public static func digest(salt: String, value: String) -> String {
        var buf: [UInt8] = [UInt8(ascii: "[")]
        buf.reserveCapacity(salt.utf8.count + value.utf8.count + 8)
        JSON.writeString(salt, into: &buf)
        buf.append(UInt8(ascii: ","))
        JSON.writeString(value, into: &buf)
        buf.append(UInt8(ascii: "]"))
        return base64url(Array(SHA256.hash(data: buf)))
    }

    /// The salt of 16 random bytes (drawn by the log: `PersonalData.newSalt()` in AuthLedger), base64url without padding.
    public static func salt(_ bits: (UInt64, UInt64)) -> String {
        base64url(bits.0.bigEndianBytes8 + bits.1.bigEndianBytes8)
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// RFC 4648 section 5 without padding. Written out (a few lines) because Foundation's
    /// base64 plus two replacements and a trim showed in the append profile: it runs for
    /// every salt and every commitment.
    static func base64url(_ bytes: [UInt8]) -> String {
        let chars = (bytes.count * 4 + 2) / 3
        return String(unsafeUninitializedCapacity: chars) { out in
            var k = 0, n = 0
            @inline(__always) func put(_ v: UInt32, _ shift: UInt32) { out[n] = alphabet[Int(v >> shift & 63)]; n += 1 }
            while k + 3 <= bytes.count {
                let v = UInt32(bytes[k]) << 16 | UInt32(bytes[k + 1]) << 8 | UInt32(bytes[k + 2])
                put(v, 18); put(v, 12); put(v, 6); put(v, 0)
                k += 3
            }
            if bytes.count - k == 1 {
                let v = UInt32(bytes[k]) << 16
                put(v, 18); put(v, 12)
            } else if bytes.count - k == 2 {
                let v = UInt32(bytes[k]) << 16 | UInt32(bytes[k + 1]) << 8
                put(v, 18); put(v, 12); put(v, 6)
            }
            return n
        }
    }

    /// Base64url without padding of exactly `count` bytes.
    static func isBase64url(_ s: String, bytes count: Int) -> Bool {
        let chars = (count * 8 + 5) / 6
        guard s.utf8.count == chars else { return false }
        return s.utf8.allSatisfy { c in
            (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z"))
                || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
        }
    }

    static func isSalt(_ s: String) -> Bool { isBase64url(s, bytes: 16) }
    package static func isDigest(_ s: String) -> Bool { isBase64url(s, bytes: 32) }

    // MARK: Sealing on append

    /// Gives each clear personal value of `e` its commitment: the salt from `disclosures`
    /// (recorded-form input, e.g. an export) or a fresh one from `newSalt`. Commitments of
    /// erased values that came with the input are kept. `e.personal` is nil when the event has none.
    package static func seal(_ e: inout Event, disclosures: StringMap?, newSalt: () -> String) throws(LedgerError) {
        guard let disclosures else { return sealWithNewSalts(&e, newSalt: newSalt) }
        let clear = clearValues(e)
        for (pointer, _) in clear where disclosures[pointer] == nil {
            throw .invalid("personal value at \(pointer) has no disclosure", field: "disclosures")
        }
        for (pointer, _) in disclosures.pairs where !clear.contains(where: { $0.pointer == pointer }) {
            throw .invalid("disclosure \(EventDecoder.clip(pointer)) names no personal value", field: "disclosures")
        }
        commit(&e, clear) { disclosures[$0]! }
    }

    /// `seal` without disclosures: a fresh salt for each clear value. It cannot fail, so an
    /// appended event may be sealed after the rules judged it (on the hashing thread of a
    /// large request): the rules read only the commitments of erased values, which came with
    /// the input.
    package static func sealWithNewSalts(_ e: inout Event, newSalt: () -> String) {
        commit(&e, clearValues(e)) { _ in newSalt() }
    }

    /// Sets `e.personal`: a commitment for each of the `clear` values with the salt `salt`
    /// gives its pointer, then the commitments of erased values that came with the input.
    private static func commit(_ e: inout Event, _ clear: [(pointer: String, value: String)], salt: (String) -> String) {
        let erased = e.personal?.entries.filter { $0.salt == nil } ?? []
        var entries: [PersonalEntry] = []
        entries.reserveCapacity(clear.count + erased.count)
        for (pointer, value) in clear {
            let s = salt(pointer)
            entries.append(PersonalEntry(pointer: pointer, digest: digest(salt: s, value: value), salt: s))
        }
        entries += erased
        e.personal = entries.isEmpty ? nil : PersonalValues(entries)
    }

    // MARK: Moving values in and out of an event

    /// Removes every personal value of `e` (what the log stores in the event's bytes).
    package static func withoutValues(_ e: Event) -> Event {
        guard e.personal != nil else { return e }
        var out = e
        for field in personalFields(e.type) { out.data[field] = nil }
        if e.type == .challengeIssued, e.data[.context] != nil { out.data[.context] = .map(StringMap()) }
        if var meta = out.meta, meta["ip"] != nil {
            meta.pairs.removeAll { $0.key == "ip" }
            out.meta = meta
        }
        return out
    }

    /// Puts `value` back at `pointer` (reading a disclosed value from the values store).
    package static func insert(_ value: String, at pointer: String, into e: inout Event) -> Bool {
        if pointer == metaIP {
            var meta = e.meta ?? StringMap()
            meta.pairs.append(("ip", value))
            e.meta = meta
            return true
        }
        if pointer.hasPrefix(contextPrefix), e.type == .challengeIssued {
            var ctx = e.data.map(.context) ?? StringMap()
            ctx.pairs.append((unescape(String(pointer.dropFirst(contextPrefix.count))), value))
            e.data[.context] = .map(ctx)
            return true
        }
        // One of the type's personal fields (one or two): compared with their pointers.
        guard let field = personalFields(e.type).first(where: { fieldPointers[Int($0.rawValue)] == pointer }) else { return false }
        e.data[field] = .string(value)
        return true
    }

    // MARK: JSON forms

    static func commitment(_ digest: String) -> JSON { .object([("_sd", .string(digest))]) }

    /// `data` and `meta` of the recorded form (clear values, commitments of erased ones)
    /// or of the hashed form (every personal value replaced by its commitment).
    static func json(_ e: Event, hashed: Bool) -> (data: JSON, meta: JSON?) {
        guard let p = e.personal else { return (e.data.json, e.meta?.json) }
        func value(_ pointer: String, _ clear: String?) -> JSON {
            if let clear, !hashed { return .string(clear) }
            return p.entry(pointer).map { commitment($0.digest) } ?? clear.map { .string($0) } ?? .null
        }
        var data: [(Field, JSON)] = []
        for (field, v) in e.data.entries {
            if field == .context, e.type == .challengeIssued, case let .map(ctx) = v {
                var members = ctx.pairs.map { ($0.key, value(contextPrefix + escape($0.key), $0.value)) }
                for entry in p.entries where entry.salt == nil && entry.pointer.hasPrefix(contextPrefix) {
                    members.append((unescape(String(entry.pointer.dropFirst(contextPrefix.count))), commitment(entry.digest)))
                }
                data.append((field, .object(members)))
            } else if case let .string(s) = v, personalFields(e.type).contains(field) {
                data.append((field, value(dataPrefix + field.name, s)))
            } else {
                data.append((field, v.json))
            }
        }
        for entry in p.entries where entry.salt == nil && entry.pointer.hasPrefix(dataPrefix) && !entry.pointer.hasPrefix(contextPrefix) {
            if let field = Field.byName[String(entry.pointer.dropFirst(dataPrefix.count))], e.data[field] == nil {
                data.append((field, commitment(entry.digest)))
            }
        }
        data.sort { $0.0.rawValue < $1.0.rawValue }
        var meta: JSON?
        if let m = e.meta {
            var members = m.pairs.map { p -> (String, JSON) in (p.key, p.key == "ip" ? value(metaIP, p.value) : JSON.string(p.value)) }
            if let ip = p.entry(metaIP), ip.salt == nil, m["ip"] == nil { members.append(("ip", commitment(ip.digest))) }
            meta = .object(members)
        }
        return (.object(data.map { ($0.0.name, $0.1) }), meta)
    }
}

extension PersonalData {
    /// `e` with every personal value taken out, whatever its state.
    static func stripped(_ e: Event) -> Event {
        var out = e
        out.personal = PersonalValues([PersonalEntry(pointer: "", digest: "", salt: nil)])
        out = withoutValues(out)
        out.personal = nil
        return out
    }

    /// Content equality when a side has erased values (see `Event.sameContent`).
    static func sameContent(_ a: Event, _ b: Event) -> Bool {
        let sa = stripped(a), sb = stripped(b)
        guard sa.data.json.canonicalBytes() == sb.data.json.canonicalBytes(),
              sa.meta?.json.canonicalBytes() == sb.meta?.json.canonicalBytes() else { return false }
        func values(_ e: Event) -> [String: (clear: String?, digest: String?)] {
            var out: [String: (clear: String?, digest: String?)] = [:]
            for (p, v) in clearValues(e) { out[p] = (v, e.personal?.entry(p)?.digest) }
            for entry in e.personal?.entries ?? [] where entry.salt == nil { out[entry.pointer] = (nil, entry.digest) }
            return out
        }
        let va = values(a), vb = values(b)
        guard Set(va.keys) == Set(vb.keys) else { return false }
        for (p, x) in va {
            let y = vb[p]!
            if let cx = x.clear, let cy = y.clear {
                if cx != cy { return false }
            } else if let dx = x.digest, let dy = y.digest, dx != dy {
                return false
            }
        }
        return true
    }
}

extension PersonalData {
    /// The digest of a commitment object `{"_sd": D}`; nil when `value` is not an object.
    static func commitmentDigest(_ value: JSON, _ path: String) throws(LedgerError) -> String? {
        guard case let .object(members) = value else { return nil }
        guard members.count == 1, members[0].0 == "_sd", case let .string(d) = members[0].1, isDigest(d) else {
            throw .invalid("\"\(path)\" must be a string or a commitment {\"_sd\": base64url SHA-256}", field: path)
        }
        return d
    }

    /// Takes the commitments of erased values out of input `data` and `meta` (recorded form).
    static func extractCommitments(type: EventType, data: inout JSON, meta: inout JSON?) throws(LedgerError) -> [PersonalEntry] {
        var out: [PersonalEntry] = []
        if case var .object(members) = data {
            var k = 0
            while k < members.count {
                let (key, value) = members[k]
                if let field = Field.byName[key], personalFields(type).contains(field),
                   let d = try commitmentDigest(value, "data.\(key)") {
                    out.append(PersonalEntry(pointer: dataPrefix + key, digest: d, salt: nil))
                    members.remove(at: k)
                    continue
                }
                if key == "context", type == .challengeIssued, case var .object(ctx) = value {
                    var j = 0
                    while j < ctx.count {
                        if let d = try commitmentDigest(ctx[j].1, "data.context.\(EventDecoder.clip(ctx[j].0))") {
                            out.append(PersonalEntry(pointer: contextPrefix + escape(ctx[j].0), digest: d, salt: nil))
                            ctx.remove(at: j)
                        } else {
                            j += 1
                        }
                    }
                    members[k].1 = .object(ctx)
                }
                k += 1
            }
            data = .object(members)
        }
        if case var .object(members)? = meta, let k = members.firstIndex(where: { $0.0 == "ip" }),
           let d = try commitmentDigest(members[k].1, "meta.ip") {
            out.append(PersonalEntry(pointer: metaIP, digest: d, salt: nil))
            members.remove(at: k)
            meta = .object(members)
        }
        return out
    }
}

extension PersonalData {
    /// A challenge record without its context's values (the keys stay, as markers).
    package static func scrubbed(_ c: ChallengeRecord) -> ChallengeRecord {
        guard let ctx = c.context, !ctx.pairs.isEmpty else { return c }
        var out = c
        out.context = StringMap(ctx.pairs.map { ($0.key, erasedMarker) })
        return out
    }

    /// An OTP record without its target.
    package static func scrubbed(_ o: OTPRecord) -> OTPRecord {
        var out = o
        out.target = erasedMarker
        return out
    }
}
