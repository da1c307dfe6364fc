import AuthLedgerCore
import NIOHTTP1

extension AuthLedgerClient {
    // MARK: More commands (reference 5.2)

    /// Renames a device (`PATCH …/devices/{d}` with `name`).
    public func rename(_ user: String, deviceId: String, name: String) async throws -> JSON {
        try await send(.PATCH, devicePath(user, deviceId), .object([("name", .string(name))]))
    }

    /// Updates a device's push token.
    public func updatePushToken(_ user: String, deviceId: String, pushToken: String) async throws -> JSON {
        try await send(.PATCH, devicePath(user, deviceId), .object([("pushToken", .string(pushToken))]))
    }

    /// Revokes every device of `user`.
    public func revokeAll(_ user: String) async throws -> JSON {
        try await send(.DELETE, "/v1/users/\(Self.segment(user))/devices", nil)
    }

    /// Records an access from a device.
    public func access(_ user: String, deviceId: String) async throws -> JSON {
        try await send(.POST, devicePath(user, deviceId) + "/access", nil)
    }

    /// Asks for a device's verification (answers `verificationId` and the link `token`).
    public func requestVerification(_ user: String, deviceId: String, name: String? = nil) async throws -> JSON {
        var m: [(String, JSON)] = [("deviceId", .string(deviceId))]
        if let name { m.append(("name", .string(name))) }
        return try await send(.POST, "/v1/users/\(Self.segment(user))/verification-requests", .object(m))
    }

    /// Sends a one-time code (answers `otpId` and `code`).
    public func sendOTP(_ user: String, channel: String, target: String) async throws -> JSON {
        try await send(.POST, "/v1/users/\(Self.segment(user))/otps", .object([("channel", .string(channel)), ("target", .string(target))]))
    }

    /// Verifies a one-time code (answers `grantId`; `otp_invalid` carries `remainingAttempts`).
    public func verifyOTP(_ user: String, otpId: String, code: String) async throws -> JSON {
        try await send(.POST, "/v1/users/\(Self.segment(user))/otps/\(Self.segment(otpId))/verify", .object([("code", .string(code))]))
    }

    /// Sets policy members (admin).
    public func setPolicy(_ members: [(String, JSON)]) async throws -> JSON {
        try await send(.PUT, "/v1/policy", .object(members))
    }

    /// Erases `user`'s personal data (admin).
    public func erase(_ user: String) async throws -> JSON {
        try await send(.DELETE, "/v1/users/\(Self.segment(user))", nil)
    }

    /// A page of `user`'s history (events with seq after `after`, at most `limit`).
    public func history(_ user: String, after: UInt64? = nil, limit: Int? = nil) async throws -> JSON {
        try await get("/v1/users/\(Self.segment(user))/history", query: [("after", after.map(String.init)), ("limit", limit.map(String.init))])
    }

    // MARK: Durable subscriptions (reference 5.2)

    /// Creates or changes subscription `name` (`from`, `user`, `types` as the API takes them).
    public func putSubscription(_ name: String, from: UInt64? = nil, user: String? = nil, types: [String]? = nil) async throws -> JSON {
        var m: [(String, JSON)] = []
        if let from { m.append(("from", .int(Int64(from)))) }
        if let user { m.append(("user", .string(user))) }
        if let types { m.append(("types", .array(types.map { .string($0) }))) }
        return try await send(.PUT, subscriptionPath(name), .object(m))
    }

    /// The subscription (its filter and checkpoint).
    public func subscription(_ name: String) async throws -> JSON { try await get(subscriptionPath(name)) }

    /// Acknowledges everything up to `seq`.
    public func ack(_ name: String, seq: UInt64) async throws -> JSON {
        try await send(.POST, subscriptionPath(name) + "/ack", .object([("seq", .int(Int64(seq)))]))
    }

    /// Deletes the subscription.
    public func deleteSubscription(_ name: String) async throws {
        _ = try await send(.DELETE, subscriptionPath(name), nil)
    }

    /// The subscription's events from its checkpoint + 1, reconnecting with `Last-Event-ID`.
    public func subscriptionEvents(_ name: String) -> ServerSentEvents {
        ServerSentEvents(client: self, path: subscriptionPath(name) + "/events", lastEventID: nil)
    }

    func devicePath(_ user: String, _ deviceId: String) -> String {
        "/v1/users/\(Self.segment(user))/devices/\(Self.segment(deviceId))"
    }

    func subscriptionPath(_ name: String) -> String { "/v1/subscriptions/\(Self.segment(name))" }
}
