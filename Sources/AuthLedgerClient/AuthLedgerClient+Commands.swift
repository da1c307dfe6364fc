import AuthLedgerCore
import NIOHTTP1

/// What a command did, as the HTTP API answers it: the events appended (their `seq` and
/// type) and what the caller gets back (ids, the OTP code and the link token once).
public struct CommandAnswer: Sendable, Equatable {
    /// An appended event: its position and type.
    public struct Appended: Sendable, Equatable {
        /// Its position in the log.
        public var seq: UInt64
        /// Its type.
        public var type: EventType
    }
    /// The events appended, in order.
    public var events: [Appended]
    /// The challenge issued, approved or denied.
    public var challengeId: String?
    /// The nonce of the challenge issued, which a signed answer covers.
    public var nonce: String?
    /// The OTP issued or checked.
    public var otpId: String?
    /// The OTP code, returned once: hand it to the user, never log it.
    public var code: String?
    /// The grant a verified OTP created (what a `via: otp` registration names).
    public var grantId: String?
    /// The verification request made or redeemed.
    public var verificationId: String?
    /// The link token of a verification request, returned once: mail it, never log it.
    public var token: String?
    /// The caller's own device was revoked, or all were.
    public var sessionEnded: Bool

    init(json: JSON) throws(AuthLedgerClientError) {
        guard let list = json["events"]?.arrayValue else { throw .invalidAnswer("a command's answer has no events") }
        var events: [Appended] = []
        for e in list {
            guard let seq = e["seq"]?.intValue, seq > 0, let name = e["type"]?.stringValue, let type = EventType(name: name) else {
                throw .invalidAnswer("an appended event is not {seq, type}")
            }
            events.append(Appended(seq: UInt64(seq), type: type))
        }
        self.events = events
        challengeId = json["challengeId"]?.stringValue
        nonce = json["nonce"]?.stringValue
        otpId = json["otpId"]?.stringValue
        code = json["code"]?.stringValue
        grantId = json["grantId"]?.stringValue
        verificationId = json["verificationId"]?.stringValue
        token = json["token"]?.stringValue
        sessionEnded = json["sessionEnded"]?.boolValue ?? false
    }
}

/// What an erasure did (`DELETE /v1/users/{u}`).
public struct ErasureAnswer: Sendable, Equatable {
    /// The user whose personal values were destroyed.
    public var user: String
    /// How many of the user's events held personal values now destroyed.
    public var erasedEvents: Int
    /// The `user.erased` event appended.
    public var events: [CommandAnswer.Appended]
}

extension AuthLedgerClient {
    /// Performs `command` on the server, as `Ledger.perform` does in process: the server's rules
    /// decide which events follow, or refuse it (``AuthLedgerClientError/refused(_:)``).
    /// `actor` is recorded as `meta.actor` (`device:<id>`, `user`, `service:<name>`, `admin:<name>`).
    ///
    /// `.expireChallenge` is not an HTTP command (the server's sweeper records expiries) and
    /// `.redeemLink` carries only the token's hash: redeem with ``redeemLink(_:actor:)``.
    @discardableResult
    public func perform(_ command: Command, actor: String? = nil) async throws(AuthLedgerClientError) -> CommandAnswer {
        let (method, path, members) = try Self.route(command)
        var body = members
        if let actor { body.append(("actor", .string(actor))) }
        let answer = try await send(method, path, body: .object(body))
        return try CommandAnswer(json: answer.json())
    }

    /// Registers the device of a verification link (`POST /v1/verification-links/redeem`).
    /// A wrong token counts as a failed authentication of the caller's address.
    @discardableResult
    public func redeemLink(_ request: LinkRedemptionRequest, actor: String? = nil) async throws(AuthLedgerClientError) -> CommandAnswer {
        var m: [(String, JSON)] = [("token", .string(request.token))]
        Self.add(&m, "name", request.name)
        Self.add(&m, "kind", request.kind?.rawValue)
        Self.add(&m, "platform", request.platform)
        Self.add(&m, "pushToken", request.pushToken)
        if let key = request.publicKey { m.append(("publicKey", key.json)) }
        if let actor { m.append(("actor", .string(actor))) }
        let answer = try await send(.POST, "/v1/verification-links/redeem", body: .object(m))
        return try CommandAnswer(json: answer.json())
    }

    /// Erases the user's personal values for good (admin scope; reference section 7).
    @discardableResult
    public func erase(user: String, reason: String? = nil, actor: String? = nil) async throws(AuthLedgerClientError) -> ErasureAnswer {
        var m: [(String, JSON)] = []
        Self.add(&m, "reason", reason)
        Self.add(&m, "actor", actor)
        let json = try await send(.DELETE, Self.userPath(user), body: .object(m)).json()
        let events = try CommandAnswer(json: json).events
        guard let u = json["user"]?.stringValue, let n = json["erasedEvents"]?.intValue else {
            throw .invalidAnswer("an erasure's answer is not {user, erasedEvents, events}")
        }
        return ErasureAnswer(user: u, erasedEvents: Int(n), events: events)
    }

    static func add(_ m: inout [(String, JSON)], _ key: String, _ value: String?) {
        if let value { m.append((key, .string(value))) }
    }

    /// The route and body members of each command (reference section 5.2).
    static func route(_ command: Command) throws(AuthLedgerClientError) -> (HTTPMethod, String, [(String, JSON)]) {
        var m: [(String, JSON)] = []
        func device(_ user: String, _ id: String, _ rest: String = "") -> String { userPath(user, "/devices/" + escaped(id) + rest) }
        func challenge(_ user: String, _ id: String, _ rest: String) -> String { userPath(user, "/challenges/" + escaped(id) + rest) }
        switch command {
        case let .requestVerification(c):
            m.append(("deviceId", .string(c.deviceId)))
            add(&m, "name", c.name)
            add(&m, "kind", c.kind?.rawValue)
            add(&m, "platform", c.platform)
            return (.POST, userPath(c.user, "/verification-requests"), m)
        case let .register(r):
            m += [("deviceId", .string(r.deviceId)), ("name", .string(r.name)), ("kind", .string(r.kind.rawValue))]
            add(&m, "platform", r.platform)
            add(&m, "appId", r.appId)
            add(&m, "pushToken", r.pushToken)
            m.append(("binding", .string(r.binding.rawValue)))
            if let via = r.via {
                m.append(("via", .string(via.name)))
                add(&m, "grantId", via.grantId)
                add(&m, "challengeId", via.challengeId)
            }
            if let key = r.publicKey { m.append(("publicKey", key.json)) }
            return (.POST, userPath(r.user, "/devices"), m)
        case let .rename(c):
            return (.PATCH, device(c.user, c.deviceId), [("name", .string(c.name))])
        case let .updatePushToken(c):
            return (.PATCH, device(c.user, c.deviceId), [("pushToken", .string(c.pushToken))])
        case let .revoke(c):
            add(&m, "reason", c.reason)
            return (.DELETE, device(c.user, c.deviceId), m)
        case let .revokeAll(c):
            add(&m, "reason", c.reason)
            return (.DELETE, userPath(c.user, "/devices"), m)
        case let .access(c):
            return (.POST, device(c.user, c.deviceId, "/access"), m)
        case let .issueChallenge(c):
            m += [("requestingDeviceId", .string(c.requestingDeviceId)), ("action", .string(c.action))]
            if let context = c.context { m.append(("context", context.json)) }
            return (.POST, userPath(c.user, "/challenges"), m)
        case let .approve(c):
            m.append(("deviceId", .string(c.deviceId)))
            if let v = c.userVerified { m.append(("userVerified", .bool(v))) }
            add(&m, "signature", c.signature)
            return (.POST, challenge(c.user, c.challengeId, "/approve"), m)
        case let .deny(c):
            m.append(("deviceId", .string(c.deviceId)))
            add(&m, "signature", c.signature)
            return (.POST, challenge(c.user, c.challengeId, "/deny"), m)
        case let .sendOTP(c):
            return (.POST, userPath(c.user, "/otps"), [("channel", .string(c.channel.rawValue)), ("target", .string(c.target))])
        case let .verifyOTP(c):
            return (.POST, userPath(c.user, "/otps/" + escaped(c.otpId) + "/verify"), [("code", .string(c.code))])
        case let .setPolicy(p):
            return (.PUT, "/v1/policy", p.data.json.objectValue ?? [])
        case let .rotateKey(c):
            return (.POST, device(c.user, c.deviceId, "/key"), [("publicKey", c.publicKey.json), ("signature", .string(c.signature))])
        case .expireChallenge:
            throw .unsupported("challenge expiries are recorded by the server's sweeper")
        case .redeemLink:
            throw .unsupported("a link is redeemed with its token: redeemLink(_:actor:)")
        }
    }
}
