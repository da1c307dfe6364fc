import Testing
@testable import AuthLedger
@testable import AuthLedgerCore

/// Access and push-token updates need an active device (SPEC 2.4), on the fast path too.
@Suite struct UserStateTests {
    let t0 = Timestamp(rfc3339: "2026-03-01T09:00:00Z")!

    func event(_ type: EventType, _ seconds: Int64, _ fields: [(Field, FieldValue)]) -> Event {
        var d = EventData()
        for (f, v) in fields { d[f] = v }
        return Event(type: type, user: "alice", at: t0.adding(seconds: seconds), data: d)
    }

    func state() throws -> UserState {
        var s = UserState(user: "alice")
        var p = Policy()
        p.coolingSeconds = 0
        try s.evolve(event(.registered, 0, [(.deviceId, .string("a")), (.name, .string("Phone")), (.kind, .string("mobile")),
                                           (.binding, .string("permanent")), (.via, .string("initial"))]), policy: p)
        try s.evolve(event(.verificationRequested, 1, [(.deviceId, .string("p"))]), policy: p)
        try s.evolve(event(.registered, 2, [(.deviceId, .string("r")), (.name, .string("Laptop")), (.kind, .string("desktop")),
                                           (.binding, .string("permanent")), (.via, .string("admin"))]), policy: p)
        try s.evolve(event(.revoked, 3, [(.deviceId, .string("r"))]), policy: p)
        return s
    }

    @Test(arguments: [("a", nil), ("p", ErrorCode.deviceNotFound), ("r", .deviceRevoked), ("x", .deviceNotFound)] as [(String, ErrorCode?)])
    func accessNeedsAnActiveDevice(device: String, refusal: ErrorCode?) throws {
        for type in [EventType.accessed, .pushTokenUpdated] {
            var s = try state()
            let before = s
            var fields: [(Field, FieldValue)] = [(.deviceId, .string(device))]
            if type == .pushTokenUpdated { fields.append((.pushToken, .string("tok"))) }
            do {
                try s.evolve(event(type, 10, fields), policy: Policy())
                #expect(refusal == nil)
                if type == .accessed { #expect(s.devices[device]?.lastAccessAt == t0.adding(seconds: 10)) }
                else { #expect(s.devices[device]?.pushToken == "tok") }
            } catch {
                #expect(error.code == refusal)
                #expect(s == before)
            }
        }
    }
}
