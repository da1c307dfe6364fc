// Foundation only for Unicode normal form C (`precomposedStringWithCanonicalMapping`), which
// the standard library does not offer publicly.
import Foundation

/// Decodes and statically validates fixture-form and recorded-form events (SPEC 1.1–1.3).
///
/// Everything a single event can get wrong on its own is `invalid_event` here; what
/// depends on history (and `invalid_name`, which ranks after `time_regression`) is
/// checked by the rules.
public enum EventDecoder {
    /// Longest accepted string in `data`, `meta` or `context` (names are judged by the rules).
    /// Longest string value, in Unicode scalars (JSON Schema's `maxLength`; ≤ 4 KiB of UTF-8).
    static let maxStringLength = 1024
    static let maxMapEntries = 32

    /// Decodes JSONL text: one event per non-blank line that does not start with `#`,
    /// each with its 1-based line number. Errors carry `file` and the line.
    public static func decodeLines(_ bytes: [UInt8], file: String? = nil) throws(LedgerError) -> [(input: EventInput, line: Int)] {
        var out: [(input: EventInput, line: Int)] = []
        var lineNo = 0
        // A UTF-8 byte order mark (as some editors write) is not part of the first line.
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        for raw in text.split(separator: 10, omittingEmptySubsequences: false) {
            lineNo += 1
            var line = raw
            if line.last == 13 { line = line.dropLast() }
            let content = line.drop { $0 == 32 || $0 == 9 }
            if content.isEmpty || content.first == 35 { continue }
            do {
                out.append((try decode(line: Array(line)), lineNo))
            } catch {
                throw error.at(file: file, line: lineNo)
            }
        }
        return out
    }

    /// Decodes one JSON line (fixture or recorded form); throws `invalid_event` for anything SPEC 1.1–1.4 refuses.
    public static func decode(line: [UInt8]) throws(LedgerError) -> EventInput {
        let json: JSON
        do {
            json = try JSON.parse(line)
        } catch {
            throw .invalid("not JSON: \(error)")
        }
        return try decode(json)
    }

    /// Decodes one event object. `allowRecorded` accepts `seq`, `version`, `prev`, `hash`.
    public static func decode(_ json: JSON, allowRecorded: Bool = true) throws(LedgerError) -> EventInput {
        guard case let .object(members) = json else { throw .invalid("an event must be a JSON object") }
        var typeName: String?, user: String?, atText: String?, dataJSON: JSON?, idText: String?, metaJSON: JSON?
        var claims = RecordedClaims()
        var disclosures: StringMap?
        for (key, value) in members {
            switch key {
            case "type": typeName = try string(value, "type")
            case "user": user = try string(value, "user")
            case "at": atText = try string(value, "at")
            case "data": dataJSON = value
            case "id": idText = try string(value, "id")
            case "meta": metaJSON = value
            case "seq" where allowRecorded: claims.seq = try position(value, "seq")
            case "version" where allowRecorded: claims.version = try position(value, "version")
            case "prev" where allowRecorded: claims.prev = try hash(value, "prev")
            case "hash" where allowRecorded: claims.hash = try hash(value, "hash")
            case "disclosures" where allowRecorded: disclosures = try stringMap(value, "disclosures")
            default: throw .invalid("unknown field \"\(clip(key))\"", field: key)
            }
        }
        guard let typeName else { throw .invalid("missing field \"type\"", field: "type") }
        guard let type = EventType(name: typeName) else { throw .invalid("unknown type \"\(clip(typeName))\"", field: "type") }
        if type == .policySet {
            if user != nil { throw .invalid("policy.set has no user", field: "user") }
        } else {
            guard let user else { throw .invalid("missing field \"user\"", field: "user") }
            try checkUser(user)
        }
        guard let atText else { throw .invalid("missing field \"at\"", field: "at") }
        guard let at = Timestamp(rfc3339: atText) else { throw .invalid("\"at\" is not an RFC 3339 time with a zone", field: "at") }
        guard at.isWithinEventRange else { throw .invalid("\"at\" must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z", field: "at") }
        guard var dataJSON else { throw .invalid("missing field \"data\"", field: "data") }
        // Commitments `{"_sd": D}` stand for erased personal values (SPEC 1.5).
        let commitments = try PersonalData.extractCommitments(type: type, data: &dataJSON, meta: &metaJSON)
        if type == .userErased && claims.hash == nil {
            throw .invalid("user.erased is appended by erase, not imported in the fixture form", field: "type")
        }
        if (!commitments.isEmpty || disclosures != nil) && claims.hash == nil {
            throw .invalid("commitments and disclosures belong to the recorded form (with its hash)", field: commitments.isEmpty ? "disclosures" : "data")
        }
        if let disclosures {
            for (pointer, salt) in disclosures.pairs where !PersonalData.isSalt(salt) || !PersonalData.isPersonalPointer(pointer, type: type) {
                throw .invalid("disclosure \(clip(pointer)) is not a personal value with a 16-byte base64url salt", field: "disclosures")
            }
        }
        let erasedFields = Set(commitments.compactMap { c in Field.byName[String(c.pointer.dropFirst(PersonalData.dataPrefix.count))] })
        let data = try decodeData(dataJSON, type: type, erasedFields: erasedFields)
        var id: EventID?
        if let idText {
            guard let parsed = EventID(idText) else { throw .invalid("\"id\" is not a UUID", field: "id") }
            id = parsed
        }
        var meta: StringMap?
        if let metaJSON {
            let m = try stringMap(metaJSON, "meta")
            try checkMetaValues(m)
            meta = m
        }
        let event = Event(id: id, type: type, user: user, at: at, data: data, meta: meta,
                          personal: commitments.isEmpty ? nil : PersonalValues(commitments))
        return EventInput(event: event, claims: claims, disclosures: disclosures)
    }

    /// Decodes `data` for `type`: known fields only, of the right kind, required ones present.
    public static func decodeData(_ json: JSON, type: EventType, erasedFields: Set<Field> = []) throws(LedgerError) -> EventData {
        guard case let .object(members) = json else { throw .invalid("\"data\" must be an object", field: "data") }
        let schema = type.schema
        var data = EventData()
        for (key, value) in members {
            guard let field = Field.byName[key], schema.contains(where: { $0.field == field }) else {
                throw .invalid("unknown field \"data.\(clip(key))\" for \(type.name)", field: "data.\(key)")
            }
            data[field] = try fieldValue(value, field: field, type: type)
        }
        for (field, required) in schema where required && data[field] == nil && !erasedFields.contains(field) {
            throw .invalid("missing field \"data.\(field.name)\" for \(type.name)", field: "data.\(field.name)")
        }
        if type == .policySet && data.entries.isEmpty {
            throw .invalid("policy.set needs at least one setting", field: "data")
        }
        if type == .registered {
            try checkPairing(via: data.string(.via) ?? "", grant: data[.grantId] != nil, challenge: data[.challengeId] != nil, prefix: "data.")
            if data[.verificationId] != nil && data.string(.via) != "email_link" {
                throw .invalid("data.verificationId goes only with via email_link", field: "data.verificationId")
            }
        }
        if type == .verificationRequested && (data[.linkHash] == nil) != (data[.linkExpiresAt] == nil) {
            throw .invalid("data.linkHash and data.linkExpiresAt go together", field: "data.linkHash")
        }
        if type == .verificationRequested && data[.linkHash] != nil && data[.verificationId] == nil {
            throw .invalid("data.linkHash needs data.verificationId", field: "data.verificationId")
        }
        return data
    }

    /// A registration's `via` and what it names go together (SPEC 1.3): `otp` with a grant
    /// and only with it, `trusted_device` with a challenge and only with it. A command may
    /// leave `via` out (nil: it is inferred from what it names), but not name both. Field
    /// names are `prefix` + the field (`data.` for events, none for commands).
    package static func checkPairing(via: String?, grant: Bool, challenge: Bool, prefix: String) throws(LedgerError) {
        guard let via else {
            if grant && challenge { throw .invalid("give a grant or a challenge, not both", field: "via") }
            return
        }
        if (via == "otp") != grant {
            throw .invalid(via == "otp" ? "via otp needs \(prefix)grantId" : "\(prefix)grantId goes only with via otp", field: "\(prefix)grantId")
        }
        if (via == "trusted_device") != challenge {
            throw .invalid(via == "trusted_device" ? "via trusted_device needs \(prefix)challengeId" : "\(prefix)challengeId goes only with via trusted_device", field: "\(prefix)challengeId")
        }
    }

    /// The check `field` of an event of `type` gets, on a command's `value` named `path`
    /// (a command is checked as the events it decides will be).
    package static func checkCommandValue(_ value: String?, _ field: Field, of type: EventType, path: String) throws(LedgerError) {
        guard let value else { return }
        _ = try fieldValue(.string(value), field: field, type: type, path: path)
    }

    /// A command's integer argument, checked as the event field it becomes (its range).
    package static func checkCommandValue(_ value: Int64?, _ field: Field, of type: EventType) throws(LedgerError) {
        guard let value else { return }
        _ = try fieldValue(.int(value), field: field, type: type)
    }

    /// A command's map argument (`context`, `publicKey`), checked as the event field it becomes.
    package static func checkCommandMap(_ value: StringMap?, _ field: Field, of type: EventType, path: String) throws(LedgerError) {
        guard let value else { return }
        _ = try fieldValue(.object(value.pairs.map { ($0.key, .string($0.value)) }), field: field, type: type, path: path)
    }

    /// The `meta` of a command's events (actor, caller, request id), checked as the fixture
    /// decoder checks an event's `meta`.
    package static func checkCommandMeta(_ meta: StringMap?) throws(LedgerError) {
        guard let meta else { return }
        _ = try stringMap(.object(meta.pairs.map { ($0.key, .string($0.value)) }), "meta")
        try checkMetaValues(meta)
    }

    static func checkMetaValues(_ m: StringMap) throws(LedgerError) {
        if let actor = m["actor"], !isValidActor(actor) {
            throw .invalid("meta.actor must be device:<id>, user, service:<name>, admin:<name> or system", field: "meta.actor")
        }
        if let caller = m["caller"], !isValidCaller(caller) {
            throw .invalid("meta.caller must be service:<name>, token:<name> or cert:<identity>", field: "meta.caller")
        }
    }

    static func fieldValue(_ value: JSON, field: Field, type: EventType, path: String? = nil) throws(LedgerError) -> FieldValue {
        let path = path ?? "data.\(field.name)"
        switch field.kind {
        case .id:
            let s = try string(value, path)
            try checkId(s, path)
            return .string(s)
        case .time:
            let s = try string(value, path)
            guard let t = Timestamp(rfc3339: s) else { throw .invalid("\"\(path)\" is not an RFC 3339 time with a zone", field: path) }
            guard t.isWithinEventRange else { throw .invalid("\"\(path)\" must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z", field: path) }
            return .time(t)
        case .bool:
            guard case let .bool(b) = value else { throw .invalid("\"\(path)\" must be a boolean", field: path) }
            return .bool(b)
        case .int:
            guard let i = value.integralValue else { throw .invalid("\"\(path)\" must be an integer", field: path) }
            let range: ClosedRange<Int64> = switch field {
            case .coolingSeconds: 0...315_360_000
            case .maxAttempts, .otpMaxAttempts: 1...1000
            case .otpPerHour: 1...1_000_000
            case .maxDevices: 1...100_000
            default: 1...315_360_000
            }
            guard range.contains(i) else { throw .invalid("\"\(path)\" must be in \(range.lowerBound)...\(range.upperBound)", field: path) }
            return .int(i)
        case .map:
            let m = try stringMap(value, path)
            // A device key is checked once, here: curve, point, no private member (SPEC 11).
            if field == .publicKey { _ = try DeviceKey(jwk: m, path: path) }
            return .map(m)
        case .string:
            let s = try string(value, path)
            if field == .name {
                // Judged by the rules (invalid_name ranks after time_regression); bound it here only against abuse.
                guard s.utf8.count <= 4096 else { throw LedgerError(.invalidName, "name is longer than 50 characters", field: path) }
                return .string(s)
            }
            guard s.unicodeScalars.count <= maxStringLength else { throw .invalid("\"\(path)\" is too long", field: path) }
            guard !hasControl(s) else { throw .invalid("\"\(path)\" has a control character", field: path) }
            switch field {
            case .kind: _ = try DeviceKind(parsing: s, path: path)
            case .binding: _ = try Binding(parsing: s, path: path)
            case .via: try Via.checkName(s, path: path)
            case .channel:
                if type == .otpIssued { _ = try OTPChannel(parsing: s, path: path) } else { _ = try VerificationChannel(parsing: s, path: path) }
            case .action:
                guard isLowerWord(s) else { throw .invalid("\"\(path)\" must be a lower-case word", field: path) }
            case .nonce:
                guard let b = Base64URL.decode(s), b.count == 16 else { throw .invalid("\"\(path)\" must be 16 bytes of base64url", field: path) }
            case .codeHash, .linkHash:
                guard Hash32(hex: s) != nil else { throw .invalid("\"\(path)\" must be a lower-case hex HMAC-SHA-256", field: path) }
            case .target:
                guard s.contains("*") else { throw .invalid("\"\(path)\" must be masked", field: path) }
            default:
                guard !s.isEmpty else { throw .invalid("\"\(path)\" must not be empty", field: path) }
            }
            return .string(s)
        }
    }

    package static func clip(_ s: String) -> String { s.count > 40 ? String(s.prefix(40)) + "…" : s }

    static func string(_ value: JSON, _ path: String) throws(LedgerError) -> String {
        guard case let .string(s) = value else { throw .invalid("\"\(path)\" must be a string", field: path) }
        return s
    }

    static func position(_ value: JSON, _ path: String) throws(LedgerError) -> UInt64 {
        guard case let .int(i) = value, i >= 1 else { throw .invalid("\"\(path)\" must be a positive integer", field: path) }
        return UInt64(i)
    }

    static func hash(_ value: JSON, _ path: String) throws(LedgerError) -> Hash32 {
        guard case let .string(s) = value, let h = Hash32(hex: s) else {
            throw .invalid("\"\(path)\" must be 64 lower-case hex digits", field: path)
        }
        return h
    }

    static func stringMap(_ value: JSON, _ path: String) throws(LedgerError) -> StringMap {
        guard case let .object(members) = value else { throw .invalid("\"\(path)\" must be an object of strings", field: path) }
        guard members.count <= maxMapEntries else { throw .invalid("\"\(path)\" has too many entries", field: path) }
        var m = StringMap()
        for (k, v) in members {
            guard case let .string(s) = v else { throw .invalid("\"\(path).\(clip(k))\" must be a string", field: "\(path).\(k)") }
            guard k.unicodeScalars.count <= 128, s.unicodeScalars.count <= maxStringLength else { throw .invalid("\"\(path)\" entry too long", field: path) }
            guard !hasControl(k), !hasControl(s) else { throw .invalid("\"\(path)\" has a control character", field: path) }
            m.pairs.append((k, s))
        }
        return m
    }

    /// Whether `s` holds a control character (U+0000–U+001F, U+007F–U+009F).
    public static func hasControl(_ s: String) -> Bool {
        s.unicodeScalars.contains { $0.value < 0x20 || ($0.value >= 0x7F && $0.value <= 0x9F) }
    }

    /// Ids and user keys: 1–128 characters, no control characters.
    public static func checkId(_ s: String, _ path: String) throws(LedgerError) {
        guard !s.isEmpty, s.utf8.count <= 512, s.count <= 128 else { throw .invalid("\"\(path)\" must be 1–128 characters", field: path) }
        guard !hasControl(s) else { throw .invalid("\"\(path)\" has a control character", field: path) }
    }

    /// Checks a user key (SPEC 1.4): an id as ``EventDecoder/checkId(_:_:)`` checks it, not starting with `$`, in
    /// Unicode normal form C; throws `invalid_event` otherwise.
    public static func checkUser(_ user: String) throws(LedgerError) {
        try checkId(user, "user")
        // By scalars: `hasPrefix` compares grapheme clusters ("$" + a combining mark is not "$").
        guard user.unicodeScalars.first != "$" else { throw .invalid("user keys starting with $ are reserved", field: "user") }
        // Swift compares strings by canonical equivalence, LMDB keys by bytes: two spellings
        // of one name ("é" and "e\u{301}") would be one user in memory and two streams on
        // disk. User keys are therefore accepted only in Unicode normal form C.
        guard Array(user.utf8) == Array(user.precomposedStringWithCanonicalMapping.utf8) else {
            throw .invalid("user keys must be in Unicode normal form C", field: "user")
        }
    }

    package static func isLowerWord(_ s: String) -> Bool {
        let b = Array(s.utf8)
        guard !b.isEmpty, b.count <= 64, b[0] >= 97, b[0] <= 122 else { return false }
        return b.allSatisfy { ($0 >= 97 && $0 <= 122) || $0 == 95 || ($0 >= 48 && $0 <= 57) }
    }

    /// Whether `actor` is a valid `meta.actor`: `user`, `system`, or `device:`, `service:` or `admin:`
    /// followed by 1–128 characters without control characters.
    public static func isValidActor(_ actor: String) -> Bool {
        if actor == "user" || actor == "system" { return true }
        return hasNamedForm(actor, ["device:", "service:", "admin:"])
    }

    /// Whether `caller` is a valid `meta.caller` (who appended the event through the
    /// service): `service:`, `token:` or `cert:` followed by 1–128 characters without
    /// control characters.
    public static func isValidCaller(_ caller: String) -> Bool {
        hasNamedForm(caller, ["service:", "token:", "cert:"])
    }

    /// `s` is one of `prefixes` followed by 1–128 characters without control characters.
    private static func hasNamedForm(_ s: String, _ prefixes: [String]) -> Bool {
        // By scalars: ":" followed by a combining mark or an emoji modifier is one grapheme
        // cluster, which `hasPrefix("admin:")` would not see as the prefix.
        for prefix in prefixes where s.unicodeScalars.starts(with: prefix.unicodeScalars) {
            var rest = String.UnicodeScalarView()
            rest.append(contentsOf: s.unicodeScalars.dropFirst(prefix.unicodeScalars.count))
            let name = String(rest)
            return !name.isEmpty && name.count <= 128 && !hasControl(name)
        }
        return false
    }

    /// A device name's validity (SPEC 1.3): trimmed, 3–50 grapheme clusters, no control characters.
    public static func checkName(_ name: String) throws(LedgerError) {
        let trimmed = trimName(name)
        guard !hasControl(trimmed) else { throw LedgerError(.invalidName, "name has a control character", field: "name") }
        guard trimmed.count >= 3, trimmed.count <= 50 else { throw LedgerError(.invalidName, "name must be 3–50 characters after trimming", field: "name") }
    }

    /// The name with leading and trailing white space removed: how answers show it and rules compare it.
    public static func trimName(_ name: String) -> String {
        var s = Substring(name)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
