import AuthLedger
import Foundation

/// An SSF event stream (SSF 1.0 section 8.1.1) and its delivery state, stored in the
/// ledger's `meta` database (`ssf/stream/<id>`, with the list of ids in `ssf/streams`),
/// so that it and its checkpoint survive restarts.
///
/// `cursor` is the stream's durable checkpoint: the last `seq` delivered (push: the
/// receiver answered 202 or 400) or acknowledged (poll: every SET up to it acked).
/// Delivery resumes after it: at least once, in `seq` order.
public struct SSFStream: Sendable, Equatable {
    /// How SETs reach the receiver: pushed to it (RFC 8935) or polled by it (RFC 8936).
    public enum Method: String, Sendable {
        /// Push delivery (RFC 8935).
        case push = "urn:ietf:rfc:8935"
        /// Poll delivery (RFC 8936).
        case poll = "urn:ietf:rfc:8936"
    }

    /// The stream's status (SSF 1.0 section 8.1.2).
    public enum Status: String, Sendable {
        /// Delivering; holding events for later; dropping them.
        case enabled, paused, disabled
    }

    /// A verification event the receiver asked for.
    public struct Verification: Sendable, Equatable {
        /// Its number within the stream.
        public var n: Int
        /// The `state` the receiver gave, echoed in the event.
        public var state: String?
    }

    /// The stream id (32 lower-case hex digits).
    public var id: String
    /// The receiver's audience: the `aud` of every SET.
    public var aud: String
    /// The receiver's description of the stream, if given.
    public var description: String?
    /// As the receiver gave them (nil: not given, every supported event is delivered).
    public var eventsRequested: [String]?
    /// Push or poll.
    public var method: Method
    /// Push: the receiver's URL.
    public var endpointURL: String?
    /// Push: the `Authorization` header value to send, sealed (AES-GCM, `SSFSecrets`).
    var sealedAuthorization: String?
    /// Enabled, paused or disabled.
    public var status: Status
    /// Why the status was last changed, if the receiver said.
    public var reason: String?
    /// The durable checkpoint: the last `seq` delivered or acknowledged.
    public var cursor: UInt64
    /// Poll: acknowledged `seq`s beyond `cursor` (acks may come out of order).
    public var acked: [UInt64]
    /// Verification events requested and not yet delivered.
    public var verifications: [Verification]
    /// The number the next verification event gets.
    public var nextVerification: Int
    /// The last errors receivers reported (push 400 bodies, poll `setErrs`), newest last.
    public var errors: [JSON]
    /// SETs delivered (push 202/400 answers, poll acks and errors).
    public var delivered: UInt64
    /// Bumped by every configuration or status change (a push worker restarts).
    public var revision: Int

    /// The event types delivered: those requested that the transmitter supports.
    public var eventsDelivered: [SSFEventType] {
        guard let requested = eventsRequested else { return SSFEventType.allCases }
        return SSFEventType.allCases.filter { requested.contains($0.rawValue) }
    }

    var filter: EventFilter { SSFEventType.filter(eventsDelivered) }

    static let maxErrors = 20
    static let maxPendingVerifications = 16

    /// The configuration as SSF shows it: `{"stream_id", "iss", "aud", "delivery",
    /// "events_supported", "events_requested", "events_delivered", "description"}`.
    /// The push authorization header is write-only: never shown.
    func configuration(issuer: String) -> JSON {
        var delivery: [(String, JSON)] = [("method", .string(method.rawValue))]
        switch method {
        case .push: if let endpointURL { delivery.append(("endpoint_url", .string(endpointURL))) }
        case .poll: delivery.append(("endpoint_url", .string(issuer + "/ssf/poll/" + id)))
        }
        var m: [(String, JSON)] = [
            ("stream_id", .string(id)), ("iss", .string(issuer)), ("aud", .string(aud)),
            ("delivery", .object(delivery)),
            ("events_supported", .array(SSFEventType.allCases.map { .string($0.rawValue) })),
        ]
        if let eventsRequested { m.append(("events_requested", .array(eventsRequested.map { .string($0) }))) }
        m.append(("events_delivered", .array(eventsDelivered.map { .string($0.rawValue) })))
        if let description { m.append(("description", .string(description))) }
        return .object(m)
    }

    /// `{"stream_id", "status", "reason"?}` plus the delivery state (`delivered_through`,
    /// `delivered`, `pending_verifications`, `errors`).
    var statusJSON: JSON {
        var m: [(String, JSON)] = [("stream_id", .string(id)), ("status", .string(status.rawValue))]
        if let reason { m.append(("reason", .string(reason))) }
        m.append(("delivered_through", .int(Int64(cursor))))
        m.append(("delivered", .int(Int64(delivered))))
        m.append(("pending_verifications", .int(Int64(verifications.count))))
        m.append(("errors", .array(errors)))
        return .object(m)
    }

    // MARK: Stored form

    static func key(_ id: String) -> String { "ssf/stream/" + id }
    static let indexKey = "ssf/streams"

    func encoded() -> [UInt8] {
        var m: [(String, JSON)] = [("aud", .string(aud))]
        if let description { m.append(("description", .string(description))) }
        if let eventsRequested { m.append(("eventsRequested", .array(eventsRequested.map { .string($0) }))) }
        m.append(("method", .string(method.rawValue)))
        if let endpointURL { m.append(("endpointURL", .string(endpointURL))) }
        if let sealedAuthorization { m.append(("authorization", .string(sealedAuthorization))) }
        m.append(("status", .string(status.rawValue)))
        if let reason { m.append(("reason", .string(reason))) }
        m.append(("cursor", .int(Int64(cursor))))
        m.append(("acked", .array(acked.map { .int(Int64($0)) })))
        m.append(("verifications", .array(verifications.map { v in
            .object([("n", .int(Int64(v.n)))] + (v.state.map { [("state", JSON.string($0))] } ?? []))
        })))
        m.append(("nextVerification", .int(Int64(nextVerification))))
        m.append(("errors", .array(errors)))
        m.append(("delivered", .int(Int64(delivered))))
        m.append(("revision", .int(Int64(revision))))
        return Array(JSON.object(m).serialized().utf8)
    }

    init(id: String, bytes: [UInt8]) throws(LedgerError) {
        guard let j = try? JSON.parse(bytes), let aud = j["aud"]?.stringValue,
              let method = j["method"]?.stringValue.flatMap(Method.init(rawValue:)),
              let status = j["status"]?.stringValue.flatMap(Status.init(rawValue:)),
              let cursor = j["cursor"]?.intValue, cursor >= 0 else {
            throw LedgerError(.storageError, "shared signals stream \(id) is stored in an unknown form")
        }
        self.id = id
        self.aud = aud
        description = j["description"]?.stringValue
        eventsRequested = j["eventsRequested"]?.arrayValue?.compactMap(\.stringValue)
        self.method = method
        endpointURL = j["endpointURL"]?.stringValue
        sealedAuthorization = j["authorization"]?.stringValue
        self.status = status
        reason = j["reason"]?.stringValue
        self.cursor = UInt64(cursor)
        acked = (j["acked"]?.arrayValue ?? []).compactMap { $0.intValue.map { UInt64(max(0, $0)) } }
        verifications = (j["verifications"]?.arrayValue ?? []).compactMap { v in
            v["n"]?.intValue.map { Verification(n: Int($0), state: v["state"]?.stringValue) }
        }
        nextVerification = Int(j["nextVerification"]?.intValue ?? 1)
        errors = j["errors"]?.arrayValue ?? []
        delivered = UInt64(max(0, j["delivered"]?.intValue ?? 0))
        revision = Int(j["revision"]?.intValue ?? 0)
    }

    init(id: String, aud: String, method: Method, cursor: UInt64) {
        self.id = id
        self.aud = aud
        self.method = method
        status = .enabled
        self.cursor = cursor
        acked = []
        verifications = []
        nextVerification = 1
        errors = []
        delivered = 0
        revision = 0
    }

    mutating func record(error: JSON) {
        errors.append(error)
        if errors.count > SSFStream.maxErrors { errors.removeFirst(errors.count - SSFStream.maxErrors) }
    }

    /// `jti` of the SET for the ledger event at `seq`: unique per stream and `seq`, and
    /// the same on every delivery, so a receiver recognises a duplicate.
    func jti(seq: UInt64) -> String { "\(id)-\(seq)" }
    func jti(verification n: Int) -> String { "\(id)-v\(n)" }

    /// What a `jti` of this stream names.
    enum Target: Equatable { case event(UInt64), verification(Int) }
    func target(ofJTI jti: String) -> Target? {
        guard jti.hasPrefix(id + "-") else { return nil }
        let rest = jti.dropFirst(id.count + 1)
        if rest.hasPrefix("v"), let n = Int(rest.dropFirst()) { return .verification(n) }
        return UInt64(rest).map { .event($0) }
    }
}

/// The stored streams of a ledger.
package struct SSFStreamStore: Sendable {
    let ledger: Ledger

    func ids() async throws -> [String] {
        guard let b = try await ledger.metaRecord(SSFStream.indexKey) else { return [] }
        return SSFStreamStore.decodeIndex(b)
    }

    static func decodeIndex(_ b: [UInt8]) -> [String] {
        ((try? JSON.parse(b))?.arrayValue ?? []).compactMap(\.stringValue)
    }

    package func get(_ id: String) async throws -> SSFStream? {
        try await ledger.metaRecord(SSFStream.key(id)).map { try SSFStream(id: id, bytes: $0) }
    }

    func all() async throws -> [SSFStream] {
        var out: [SSFStream] = []
        for id in try await ids() { if let s = try await get(id) { out.append(s) } }
        return out
    }

    /// Stores a new stream and adds it to the index.
    func create(_ s: SSFStream) async throws {
        try await ledger.updateMetaRecords(reading: [SSFStream.indexKey]) { get, put in
            var ids = try get(SSFStream.indexKey).map(SSFStreamStore.decodeIndex) ?? []
            ids.append(s.id)
            try put(SSFStream.indexKey, Array(JSON.array(ids.map { .string($0) }).serialized().utf8))
            try put(SSFStream.key(s.id), s.encoded())
        }
    }

    /// Changes the stream with `id` by `body` (404 `not_found` when there is none);
    /// stores it only when it changed. Returns it.
    @discardableResult
    func update(_ id: String, _ body: @escaping @Sendable (inout SSFStream) throws -> Void) async throws -> SSFStream {
        try await ledger.updateMetaRecords(reading: [SSFStream.key(id)]) { get, put in
            guard let bytes = try get(SSFStream.key(id)) else {
                throw LedgerError(.notFound, "no stream \(id)", field: "stream_id")
            }
            var s = try SSFStream(id: id, bytes: bytes)
            let before = s
            do {
                try body(&s)
            } catch let e as LedgerError {
                throw e
            } catch {
                throw LedgerError.invalid("\(error)")
            }
            if s != before { try put(SSFStream.key(id), s.encoded()) }
            return s
        }
    }

    /// Deletes the stream; false when there was none.
    func delete(_ id: String) async throws -> Bool {
        try await ledger.updateMetaRecords(reading: [SSFStream.key(id), SSFStream.indexKey]) { get, put in
            guard try get(SSFStream.key(id)) != nil else { return false }
            let ids = (try get(SSFStream.indexKey).map(SSFStreamStore.decodeIndex) ?? []).filter { $0 != id }
            try put(SSFStream.indexKey, Array(JSON.array(ids.map { .string($0) }).serialized().utf8))
            try put(SSFStream.key(id), nil)
            return true
        }
    }
}
