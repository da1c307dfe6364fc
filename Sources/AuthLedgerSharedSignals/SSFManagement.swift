import AuthLedger
import Foundation

/// Stream management (SSF 1.0 section 8): create, read, update (PATCH), replace
/// (PUT), delete, status and verification requests. Bodies are checked strictly:
/// a member of the wrong type is 400 `invalid_event` naming it; event types the
/// transmitter does not know are ignored, as SSF says.
extension SharedSignals {
    static let receiverMembers: Set<String> = ["delivery", "events_requested", "description"]
    static let transmitterMembers: Set<String> = ["stream_id", "iss", "aud", "events_supported", "events_delivered",
                                                   "min_verification_interval", "inactivity_timeout"]

    /// The receiver-supplied part of a configuration.
    struct ReceiverConfiguration {
        var method: SSFStream.Method = .poll
        var endpointURL: String?
        var authorization: String?
        var eventsRequested: [String]?
        var description: String?
        var has: Set<String> = []
    }

    func parseConfiguration(_ body: JSON, creating: Bool) throws -> (ReceiverConfiguration, members: [String: JSON]) {
        guard case let .object(list) = body else { throw LedgerError.invalid("the body must be a JSON object") }
        var members: [String: JSON] = [:]
        var c = ReceiverConfiguration()
        for (k, v) in list {
            let known = SharedSignals.receiverMembers.contains(k) || SharedSignals.transmitterMembers.contains(k)
            guard known else { throw LedgerError.invalid("unknown field \"\(EventDecoder.clip(k))\"", field: k) }
            members[k] = v
        }
        if let d = members["delivery"] {
            c.has.insert("delivery")
            guard case let .object(dl) = d else { throw LedgerError.invalid("\"delivery\" must be an object", field: "delivery") }
            var dm: [String: JSON] = [:]
            for (k, v) in dl {
                guard ["method", "endpoint_url", "authorization_header"].contains(k) else {
                    throw LedgerError.invalid("unknown field \"delivery.\(EventDecoder.clip(k))\"", field: "delivery.\(k)")
                }
                dm[k] = v
            }
            if let m = dm["method"] {
                guard let s = m.stringValue, let method = SSFStream.Method(rawValue: s) else {
                    throw LedgerError.invalid("delivery.method must be urn:ietf:rfc:8935 (push) or urn:ietf:rfc:8936 (poll)", field: "delivery.method")
                }
                c.method = method
            }
            switch c.method {
            case .push:
                guard let u = dm["endpoint_url"]?.stringValue else {
                    throw LedgerError.invalid("push delivery needs delivery.endpoint_url", field: "delivery.endpoint_url")
                }
                try SharedSignals.checkURL(u)
                c.endpointURL = u
                if let a = dm["authorization_header"] {
                    guard let s = a.stringValue, !s.isEmpty, s.unicodeScalars.count <= 4096, !EventDecoder.hasControl(s) else {
                        throw LedgerError.invalid("delivery.authorization_header must be a header value (1–4096 characters, no control characters)",
                                                  field: "delivery.authorization_header")
                    }
                    c.authorization = s
                }
            case .poll:
                // The transmitter supplies the poll URL (SSF 1.0 6.1.2): one given is ignored, but it is a string.
                if let u = dm["endpoint_url"], u.stringValue == nil {
                    throw LedgerError.invalid("delivery.endpoint_url must be a string", field: "delivery.endpoint_url")
                }
                guard dm["authorization_header"] == nil else {
                    throw LedgerError.invalid("delivery.authorization_header is for push delivery", field: "delivery.authorization_header")
                }
            }
        }
        if let e = members["events_requested"] {
            c.has.insert("events_requested")
            guard let items = e.arrayValue, items.count <= 64 else {
                throw LedgerError.invalid("\"events_requested\" must be an array of event type URIs", field: "events_requested")
            }
            c.eventsRequested = try items.map { item in
                guard let s = item.stringValue, s.unicodeScalars.count <= 512, !EventDecoder.hasControl(s) else {
                    throw LedgerError.invalid("\"events_requested\" must be an array of event type URIs", field: "events_requested")
                }
                return s
            }
        }
        if let d = members["description"] {
            c.has.insert("description")
            guard let s = d.stringValue, !EventDecoder.hasControl(s) else {
                throw LedgerError.invalid("\"description\" must be a string", field: "description")
            }
            // SSF lets the transmitter truncate it.
            c.description = String(s.prefix(256))
        }
        if creating, let a = members["aud"] {
            guard let s = a.stringValue, !s.isEmpty, s.unicodeScalars.count <= 512, !EventDecoder.hasControl(s) else {
                throw LedgerError.invalid("\"aud\" must be 1–512 characters, no control characters", field: "aud")
            }
        }
        if !creating {
            // Transmitter-supplied members may be echoed back (SSF 1.0 8.1.1.3): of their type.
            for k in ["iss", "aud"] where members[k] != nil && members[k]?.stringValue == nil {
                throw LedgerError.invalid("\"\(k)\" must be a string", field: k)
            }
            for k in ["events_supported", "events_delivered"] {
                if let v = members[k], v.arrayValue?.allSatisfy({ $0.stringValue != nil }) != true {
                    throw LedgerError.invalid("\"\(k)\" must be an array of strings", field: k)
                }
            }
        }
        return (c, members)
    }

    /// An absolute `http(s)` URL with a host, as ``SSFEndpointURL`` (and openapi.yaml) states.
    static func checkURL(_ u: String) throws {
        guard SSFEndpointURL.accepts(u), let url = URL(string: u), let host = url.host, !host.isEmpty else {
            throw LedgerError.invalid("delivery.endpoint_url must be an http(s) URL with a host, no user info and no fragment, at most 2048 characters",
                                      field: "delivery.endpoint_url")
        }
    }

    func apply(_ c: ReceiverConfiguration, to s: inout SSFStream, replacing: Bool) throws {
        if replacing || c.has.contains("delivery") {
            s.method = c.method
            s.endpointURL = c.method == .push ? c.endpointURL : nil
            s.sealedAuthorization = try c.authorization.map { try secrets().seal($0, stream: s.id) }
        }
        if replacing || c.has.contains("events_requested") { s.eventsRequested = c.eventsRequested }
        if replacing || c.has.contains("description") { s.description = c.description }
    }

    /// Transmitter-supplied members in an update must match the stream (SSF 8.1.1.3).
    func checkTransmitterMembers(_ members: [String: JSON], _ s: SSFStream, issuer: String) throws {
        let current = s.configuration(issuer: issuer)
        for k in ["iss", "aud", "events_supported", "events_delivered"] {
            if let v = members[k], v.canonicalBytes() != current[k]?.canonicalBytes() {
                throw LedgerError.invalid("\"\(k)\" does not match the stream's (it is the transmitter's to set)", field: k)
            }
        }
    }

    /// `POST /ssf/streams`: a new stream, delivering the events appended from now on.
    package func createStream(_ body: JSON) async throws -> JSON {
        let issuer = try requireIssuer()
        let (c, members) = try parseConfiguration(body, creating: true)
        for k in ["stream_id", "iss", "events_supported", "events_delivered"] where members[k] != nil {
            throw LedgerError.invalid("\"\(k)\" is the transmitter's to set", field: k)
        }
        let id = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let aud = members["aud"]?.stringValue ?? (c.method == .push ? c.endpointURL! : "urn:authledger:ssf:stream:\(id)")
        var s = SSFStream(id: id, aud: aud, method: c.method, cursor: try await ledger.head().seq)
        try apply(c, to: &s, replacing: true)
        try await store.create(s)
        changes.ring()
        return s.configuration(issuer: issuer)
    }

    /// `GET /ssf/streams[?stream_id=]`: one stream, or all of them (a list).
    package func readStreams(_ id: String?) async throws -> JSON {
        let issuer = try requireIssuer()
        if let id {
            guard let s = try await store.get(try SharedSignals.checkStreamId(id)) else { throw LedgerError(.notFound, "no stream \(id)", field: "stream_id") }
            return s.configuration(issuer: issuer)
        }
        return .array(try await store.all().map { $0.configuration(issuer: issuer) })
    }

    /// `PATCH` (update the members given) and `PUT` (replace) on `/ssf/streams`.
    package func updateStream(_ body: JSON, replacing: Bool) async throws -> JSON {
        let issuer = try requireIssuer()
        let (c, members) = try parseConfiguration(body, creating: false)
        guard let id = members["stream_id"]?.stringValue else { throw LedgerError.invalid("missing field \"stream_id\"", field: "stream_id") }
        _ = try SharedSignals.checkStreamId(id)
        guard let existing = try await store.get(id) else { throw LedgerError(.notFound, "no stream \(id)", field: "stream_id") }
        try checkTransmitterMembers(members, existing, issuer: issuer)
        let sealed: String? = (replacing || c.has.contains("delivery")) ? try c.authorization.map { try secrets().seal($0, stream: id) } : nil
        let s = try await store.update(id) { s in
            if replacing || c.has.contains("delivery") {
                s.method = c.method
                s.endpointURL = c.method == .push ? c.endpointURL : nil
                s.sealedAuthorization = sealed
            }
            if replacing || c.has.contains("events_requested") { s.eventsRequested = c.eventsRequested }
            if replacing || c.has.contains("description") { s.description = c.description }
            s.revision += 1
        }
        changes.ring()
        return s.configuration(issuer: issuer)
    }

    /// `DELETE /ssf/streams?stream_id=`.
    package func deleteStream(_ id: String?) async throws {
        guard let id else { throw LedgerError.invalid("missing query parameter stream_id", field: "stream_id") }
        guard try await store.delete(try SharedSignals.checkStreamId(id)) else { throw LedgerError(.notFound, "no stream \(id)", field: "stream_id") }
        changes.ring()
    }

    /// `GET /ssf/status?stream_id=`.
    package func streamStatus(_ id: String?) async throws -> JSON {
        guard let id else { throw LedgerError.invalid("missing query parameter stream_id", field: "stream_id") }
        guard let s = try await store.get(try SharedSignals.checkStreamId(id)) else { throw LedgerError(.notFound, "no stream \(id)", field: "stream_id") }
        return s.statusJSON
    }

    /// `POST /ssf/status` `{"stream_id", "status", "reason"?}`. A disabled stream holds
    /// nothing: enabling (or pausing) it again starts after the head of that moment.
    package func setStatus(_ body: JSON) async throws -> JSON {
        guard case let .object(list) = body else { throw LedgerError.invalid("the body must be a JSON object") }
        var m: [String: JSON] = [:]
        for (k, v) in list {
            guard ["stream_id", "status", "reason"].contains(k) else { throw LedgerError.invalid("unknown field \"\(EventDecoder.clip(k))\"", field: k) }
            m[k] = v
        }
        guard let id = m["stream_id"]?.stringValue else { throw LedgerError.invalid("missing field \"stream_id\"", field: "stream_id") }
        _ = try SharedSignals.checkStreamId(id)
        guard let status = m["status"]?.stringValue.flatMap(SSFStream.Status.init(rawValue:)) else {
            throw LedgerError.invalid("status must be enabled, paused or disabled", field: "status")
        }
        var givenReason: String?
        if let r = m["reason"] {
            guard let s = r.stringValue, !EventDecoder.hasControl(s), s.unicodeScalars.count <= 1024 else {
                throw LedgerError.invalid("\"reason\" must be a short string", field: "reason")
            }
            givenReason = s
        }
        let reason = givenReason
        let head = try await ledger.head().seq
        let s = try await store.update(id) { s in
            if s.status == .disabled, status != .disabled {
                s.cursor = max(s.cursor, head)
                s.acked = []
            }
            if s.status != status { s.revision += 1 }
            s.status = status
            s.reason = reason
        }
        changes.ring()
        return .object([("stream_id", .string(s.id)), ("status", .string(s.status.rawValue))] + (s.reason.map { [("reason", JSON.string($0))] } ?? []))
    }

    /// `POST /ssf/verify` `{"stream_id", "state"?}`: queues a verification event, sent
    /// ahead of the stream's other SETs (429 `rate_limited` beyond 16 waiting).
    package func requestVerification(_ body: JSON) async throws {
        guard case let .object(list) = body else { throw LedgerError.invalid("the body must be a JSON object") }
        var m: [String: JSON] = [:]
        for (k, v) in list {
            guard ["stream_id", "state"].contains(k) else { throw LedgerError.invalid("unknown field \"\(EventDecoder.clip(k))\"", field: k) }
            m[k] = v
        }
        guard let id = m["stream_id"]?.stringValue else { throw LedgerError.invalid("missing field \"stream_id\"", field: "stream_id") }
        _ = try SharedSignals.checkStreamId(id)
        var givenState: String?
        if let st = m["state"] {
            // SSF 1.0 8.1.4.2: an arbitrary string, echoed in the verification event (as JSON,
            // so any character is safe); bounded because it waits in the stream's record.
            guard let s = st.stringValue, s.unicodeScalars.count <= 1024 else {
                throw LedgerError.invalid("\"state\" must be a string of at most 1024 characters", field: "state")
            }
            givenState = s
        }
        let state = givenState
        // Full is decided inside the update (atomically) and answered after it: the
        // writer passes only the ledger's own errors through.
        let full = OnceFlag()
        try await store.update(id) { s in
            guard s.verifications.count < SSFStream.maxPendingVerifications else { return full.set() }
            s.verifications.append(.init(n: s.nextVerification, state: state))
            s.nextVerification += 1
        }
        if full.isSet {
            throw SharedSignalsRefusal(.rateLimited, "\(SSFStream.maxPendingVerifications) verification events are already waiting on this stream")
        }
        changes.ring()
    }

    /// Stream ids are the transmitter's: 32 lower-case hex digits.
    static func checkStreamId(_ id: String) throws -> String {
        guard id.utf8.count == 32, id.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
            throw LedgerError(.notFound, "no stream \(EventDecoder.clip(id))", field: "stream_id")
        }
        return id
    }
}
