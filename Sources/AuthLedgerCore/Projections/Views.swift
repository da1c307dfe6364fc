/// Options every query takes (SPEC 3): a position, an as-of time, and view flags.
public struct QueryOptions: Sendable {
    /// Replay events with `seq <= position` (nil: the head; beyond the head means the head).
    public var position: UInt64?
    /// Replay events with `at <= asOf` and evaluate expiry and cooling at this time.
    public var asOf: Timestamp
    /// The device the caller names as its own (`current: true`).
    public var current: String?
    /// List revoked devices too (`devices` only; they are left out by default).
    public var includeRevoked: Bool
    /// The requester's view of a challenge: status only.
    public var asRequester: Bool
    /// Compute by replaying from scratch instead of from maintained projections.
    public var fromScratch: Bool

    /// Options for a query as of `asOf`, at the head by default, with every view flag off.
    public init(position: UInt64? = nil, asOf: Timestamp, current: String? = nil, includeRevoked: Bool = false,
                asRequester: Bool = false, fromScratch: Bool = false) {
        self.position = position
        self.asOf = asOf
        self.current = current
        self.includeRevoked = includeRevoked
        self.asRequester = asRequester
        self.fromScratch = fromScratch
    }
}

/// The projections of SPEC section 3, as JSON answers, computed from a `UserState`.
public enum Views {
    static func time(_ t: Timestamp?) -> JSON { t.map { .string($0.formatted) } ?? .null }
    static func str(_ s: String?) -> JSON { s.map { .string($0) } ?? .null }

    /// The cooling members (SPEC 3.2) at `asOf`: `active`, `until` (null when inactive) and
    /// `statusCode` (146 while a window is open, 100 otherwise).
    public static func cooling(_ s: UserState, asOf: Timestamp) -> [(String, JSON)] {
        let active = s.isCooling(at: asOf)
        return [("active", .bool(active)), ("until", active ? time(s.coolingUntil) : .null),
                ("statusCode", .int(active ? 146 : 100))]
    }

    /// A device as SPEC 3 lists it: exactly these members, plus `requestedAt` for a device
    /// that was never registered (pending, or revoked while pending), whose `registeredAt`,
    /// `lastAccessAt`, `binding` and `via` are null.
    public static func device(_ d: DeviceRecord, current: String?) -> JSON {
        let registered = d.status != .pending && d.registeredAt != nil
        var m: [(String, JSON)] = [
            ("deviceId", .string(d.deviceId)),
            ("name", d.name.map { .string(EventDecoder.trimName($0)) } ?? .null),
            ("kind", str(d.kind)),
            ("platform", str(d.platform)),
            ("binding", registered ? str(d.binding) : .null),
            ("status", .string(d.status.name)),
            ("via", registered ? str(d.via) : .null),
        ]
        if !registered { m.append(("requestedAt", time(d.requestedAt))) }
        m += [
            ("registeredAt", registered ? time(d.registeredAt) : .null),
            ("lastAccessAt", registered ? time(d.lastAccessAt) : .null),
            ("pushEnrolled", .bool(d.pushToken != nil && d.status == .active)),
            ("current", .bool(current != nil && d.deviceId == current)),
        ]
        return .object(m)
    }

    /// The devices the `devices` answer lists: revoked ones only with `includeRevoked`; ordered by
    /// registration time (request time while never registered), then id.
    public static func listedDevices(_ s: UserState, includeRevoked: Bool) -> [DeviceRecord] {
        s.devices.values
            .filter { includeRevoked || $0.status != .revoked }
            .sorted { ($0.sortTime, $0.deviceId) < ($1.sortTime, $1.deviceId) }
    }

    /// The `devices` answer (SPEC 3.1) for state `s` at `position`.
    public static func devices(_ s: UserState, position: UInt64, options o: QueryOptions) -> JSON {
        .object([
            ("user", .string(s.user)),
            ("position", .int(Int64(position))),
            ("asOf", .string(o.asOf.formatted)),
            ("devices", .array(listedDevices(s, includeRevoked: o.includeRevoked).map { device($0, current: o.current) })),
            ("cooling", .object(cooling(s, asOf: o.asOf))),
        ] + erasedMember(s))
    }

    /// `"erased": true` on every answer about a user whose personal values were erased (SPEC 3, 1.5).
    static func erasedMember(_ s: UserState) -> [(String, JSON)] { s.erased ? [("erased", .bool(true))] : [] }

    /// `{"user","active","until","statusCode"}` (SPEC 3), and `erased` after an erasure.
    public static func coolingAnswer(_ s: UserState, position: UInt64, options o: QueryOptions) -> JSON {
        .object([("user", .string(s.user))] + cooling(s, asOf: o.asOf) + erasedMember(s))
    }

    /// The challenges pending at `asOf`, ordered by `issuedAt`, then id.
    public static func pendingChallenges(_ s: UserState, asOf: Timestamp) -> [ChallengeRecord] {
        s.challenges.values
            .filter { $0.outcome(at: asOf) == .pending }
            .sorted { ($0.issuedAt, $0.challengeId) < ($1.issuedAt, $1.challengeId) }
    }

    /// The `pending` answer (SPEC 3.3): an array of the pending challenges; `context` is `{}` when a challenge has none.
    public static func pending(_ s: UserState, options o: QueryOptions) -> JSON {
        .array(pendingChallenges(s, asOf: o.asOf).map { c in
            .object([
                ("challengeId", .string(c.challengeId)),
                ("action", .string(c.action)),
                ("requestingDeviceId", .string(c.requestingDeviceId)),
                ("issuedAt", .string(c.issuedAt.formatted)),
                ("expiresAt", .string(c.expiresAt.formatted)),
                ("context", .object((c.context?.pairs ?? []).map { p -> (String, JSON) in
                    (p.key, p.value == PersonalData.erasedMarker ? JSON.null : JSON.string(p.value))
                })),
            ] + erasedMember(s))
        })
    }

    /// `status` is what the requester may learn: denial and expiry look the same.
    public static func challenge(_ c: ChallengeRecord, options o: QueryOptions, erased: Bool = false) -> JSON {
        let outcome = c.outcome(at: o.asOf)
        let status = switch outcome {
        case .pending: "pending"
        case .approved: "approved"
        case .denied, .expired: "not_approved"
        }
        // SPEC 3: `{"challengeId","status","outcome"}`; the requester's view has `status` only.
        var m: [(String, JSON)] = [("challengeId", .string(c.challengeId)), ("status", .string(status))]
        if !o.asRequester { m.append(("outcome", .string(outcome.name))) }
        if erased { m.append(("erased", .bool(true))) }
        return .object(m)
    }
}
