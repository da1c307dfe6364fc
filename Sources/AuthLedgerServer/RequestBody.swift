import AuthLedger
import Hummingbird
import NIOCore

/// A request body decoded strictly: a JSON object of known members only, each of the
/// right type and within its length bound. Every refusal is `invalid_event` naming the
/// member (`invalid_name` for names is left to the rules, which rank it).
struct RequestBody {
    private var members: [String: JSON]

    /// Longest string member, in Unicode scalars (what a JSON Schema `maxLength` counts,
    /// so openapi.yaml can state it exactly; at most 4 KiB of UTF-8).
    static let maxStringBytes = 1024

    init(members: [String: JSON]) { self.members = members }

    /// Reads at most `limit` bytes and decodes a JSON object whose members are all in
    /// `allowed`. An empty body is an empty object when `optional`.
    static func read(_ request: Request, limit: Int, allowed: Set<String>, optional: Bool = false) async throws -> RequestBody {
        let json = try await readJSON(request, limit: limit, optional: optional)
        guard case let .object(list) = json ?? .object([]) else {
            throw LedgerError.invalid("the body must be a JSON object")
        }
        var members: [String: JSON] = [:]
        for (k, v) in list {
            guard allowed.contains(k) else {
                throw LedgerError.invalid("unknown field \"\(clip(k))\"", field: k)
            }
            // Strict: an optional member is left out, not null.
            guard v != .null else { throw LedgerError.invalid("\"\(k)\" must not be null (leave it out)", field: k) }
            members[k] = v
        }
        return RequestBody(members: members)
    }

    /// The body as JSON (nil when empty and `optional`).
    static func readJSON(_ request: Request, limit: Int, optional: Bool) async throws -> JSON? {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch let e as NIOTooManyBytesError {
            _ = e
            throw HTTPRefusal(.payloadTooLarge, "the request body is larger than \(limit) bytes")
        }
        let bytes = buffer.readableBytesView
        if bytes.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }) {
            if optional { return nil }
            throw LedgerError.invalid("a JSON body is required")
        }
        do {
            return try JSON.parse(bytes)
        } catch {
            throw LedgerError.invalid("the body is not JSON: \(error)")
        }
    }

    static func clip(_ s: String) -> String { EventDecoder.clip(s) }

    func has(_ key: String) -> Bool { members[key] != nil }

    /// A string member; `raw` leaves content checks to the rules (names).
    func string(_ key: String, required: Bool = false, raw: Bool = false) throws -> String? {
        guard let v = members[key], v != .null else {
            if required { throw LedgerError.invalid("missing field \"\(key)\"", field: key) }
            return nil
        }
        guard case let .string(s) = v else { throw LedgerError.invalid("\"\(key)\" must be a string", field: key) }
        if raw {
            guard s.utf8.count <= 4096 else { throw LedgerError(.invalidName, "\"\(key)\" is longer than 50 characters", field: key) }
            return s
        }
        guard s.unicodeScalars.count <= Self.maxStringBytes else { throw LedgerError.invalid("\"\(key)\" is too long", field: key) }
        guard !EventDecoder.hasControl(s) else { throw LedgerError.invalid("\"\(key)\" has a control character", field: key) }
        guard !s.isEmpty else { throw LedgerError.invalid("\"\(key)\" must not be empty", field: key) }
        return s
    }

    func requiredString(_ key: String, raw: Bool = false) throws -> String {
        try string(key, required: true, raw: raw)!
    }

    func bool(_ key: String) throws -> Bool? {
        guard let v = members[key], v != .null else { return nil }
        guard case let .bool(b) = v else { throw LedgerError.invalid("\"\(key)\" must be a boolean", field: key) }
        return b
    }

    func position(_ key: String, required: Bool = false) throws -> UInt64? {
        guard let v = members[key], v != .null else {
            if required { throw LedgerError.invalid("missing field \"\(key)\"", field: key) }
            return nil
        }
        guard let i = v.integralValue, i >= 0 else { throw LedgerError.invalid("\"\(key)\" must be a non-negative integer", field: key) }
        return UInt64(i)
    }

    /// An object of strings (`context`), bounded like `meta`.
    func stringMap(_ key: String) throws -> StringMap? {
        guard let v = members[key], v != .null else { return nil }
        guard case let .object(list) = v else { throw LedgerError.invalid("\"\(key)\" must be an object of strings", field: key) }
        guard list.count <= 32 else { throw LedgerError.invalid("\"\(key)\" has too many entries", field: key) }
        var m = StringMap()
        for (k, value) in list {
            guard case let .string(s) = value else { throw LedgerError.invalid("\"\(key).\(Self.clip(k))\" must be a string", field: "\(key).\(k)") }
            guard k.unicodeScalars.count <= 128, s.unicodeScalars.count <= Self.maxStringBytes, !EventDecoder.hasControl(k), !EventDecoder.hasControl(s) else {
                throw LedgerError.invalid("\"\(key).\(Self.clip(k))\" is too long or has a control character", field: "\(key).\(k)")
            }
            m.pairs.append((k, s))
        }
        return m
    }

    /// `meta` of the command: `actor` as the body names it, else `service:<the caller's
    /// name>`; `caller`, the authenticated caller of the request (``Caller/current``).
    func meta() throws -> StringMap? {
        let actor = try string("actor")
        if let actor, !EventDecoder.isValidActor(actor) {
            throw LedgerError.invalid("actor must be device:<id>, user, service:<name>, admin:<name> or system", field: "actor")
        }
        var pairs: [(key: String, value: String)] = []
        let caller = Caller.current
        if let a = actor ?? caller?.actor { pairs.append(("actor", a)) }
        if let name = caller?.name { pairs.append(("caller", name)) }
        return pairs.isEmpty ? nil : StringMap(pairs)
    }

    /// The members as a JSON object (for `policy.set` data).
    func object(excluding: Set<String>) -> JSON {
        .object(members.filter { !excluding.contains($0.key) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }
}
