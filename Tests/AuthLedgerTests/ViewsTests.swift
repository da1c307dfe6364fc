import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

/// The read side's shapes and orders (SPEC 3).
@Suite struct ViewsTests {
    static func ev(_ type: String, _ at: String, _ data: String) -> String {
        line(type, user: "u", at: "2026-04-01T\(at)Z", data: data)
    }
    static func reg(_ id: String, _ at: String, via: String) -> String {
        ev("device.registered", at, #"{"deviceId":"\#(id)","name":"Device \#(id)","kind":"other","binding":"permanent","via":"\#(via)"}"#)
    }

    @Test(arguments: StorageKind.all) func devicesAreOrderedByRegistrationOrRequestTimeThenDeviceId(_ storage: StorageKind) async throws {
        // Given devices registered at the same time (no cooling) and pending ones requested around them
        let ledger = try await storage.freshLedger()
        try await ledger.importText([
            line("policy.set", user: nil, at: "2026-04-01T09:00:00Z", data: #"{"coolingSeconds":0}"#),
            Self.ev("device.verification_requested", "09:59:00", #"{"deviceId":"zz-early"}"#),
            Self.reg("m", "10:00:00", via: "initial"),
            Self.reg("b", "10:00:00", via: "admin"),
            Self.reg("0a", "10:00:00", via: "admin"),
            Self.ev("device.verification_requested", "10:00:00", #"{"deviceId":"c-pending"}"#),
            Self.ev("device.verification_requested", "10:01:00", #"{"deviceId":"a-late"}"#),
        ].joined(separator: "\n"))
        // When listed
        let answer = try await ledger.devices(of: "u", QueryOptions(asOf: t("2026-04-01T11:00:00Z"), current: "b")).json
        let devices = answer["devices"]!.arrayValue!
        // Then by time, ties by deviceId, pending ones by their request time
        #expect(devices.map { $0["deviceId"]!.stringValue! } == ["zz-early", "0a", "b", "c-pending", "m", "a-late"])
        #expect(devices.map { $0["current"]! } == [false, false, true, false, false, false].map(JSON.bool))
        let pending = devices[0]
        for key in ["registeredAt", "lastAccessAt", "binding", "via"] { #expect(pending[key] == .null, "\(key)") }
        #expect(pending["requestedAt"] == .string("2026-04-01T09:59:00.000Z"))
        #expect(pending["status"] == .string("pending"))
    }

    /// The typed answers carry the rules' results as values, and encode — with Foundation's
    /// `JSONEncoder`, not only the ledger's own writer — to the documents the CLI and the
    /// HTTP API print.
    @Test func typedAnswersCarryTheValuesAndEncodeToTheDocuments() async throws {
        let ledger = try await Support.freshLedger()
        for name in ["02-trusted-device-approval", "03-device-management-cooling"] {
            try await ledger.importText(try String(contentsOf: Support.fixture("scenarios/\(name).jsonl"), encoding: .utf8))
        }
        let head = try await ledger.head().seq
        func encoded(_ value: some Encodable) throws -> String {
            try JSON.parse(Array(JSONEncoder().encode(value))).canonical()
        }
        for asOf in ["2026-03-02T08:00:30Z", "2026-03-03T07:02:00Z", "2026-03-09T00:00:00Z"] {
            let o = QueryOptions(asOf: t(asOf))
            for user in ["bob", "carol"] {
                let list = try await ledger.devices(of: user, o)
                #expect(list.user == user && list.position == head)
                #expect(list.json == (try await ledger.devices(of: user, o).json))
                #expect(try encoded(list) == list.json.canonical())
                #expect(list.devices.map(\.deviceId) == Views.listedDevices(try await ledger.state(of: user, asOf: o.asOf).0, includeRevoked: false).map(\.deviceId))
                let cooling = try await ledger.cooling(of: user, o)
                #expect(cooling.cooling == list.cooling)
                #expect(cooling.json["statusCode"] == .int(cooling.cooling.active ? 146 : 100))
                #expect(try encoded(cooling) == cooling.json.canonical())
                let pending = try await ledger.pending(of: user, o)
                #expect(JSON.array(pending.map(\.json)) == (try await ledger.pending(of: user, o).json))
                #expect(try encoded(pending) == JSON.array(pending.map(\.json)).canonical())
            }
        }
        // bob's challenges: the full view and the requester's view.
        let o = QueryOptions(asOf: t("2026-03-09T00:00:00Z"))
        for id in ["c-login-1", "c-login-2"] {
            let full = try await ledger.challenge(id, of: "bob", o)
            let requester = try await ledger.challenge(id, of: "bob", QueryOptions(asOf: o.asOf, asRequester: true))
            #expect(full.outcome != nil && requester.outcome == nil && full.status == requester.status)
            #expect(full.status == (full.outcome == .approved ? "approved" : full.outcome == .pending ? "pending" : "not_approved"))
            #expect(try encoded(full) == full.json.canonical())
            #expect(full.json == (try await ledger.challenge(id, of: "bob", o).json))
        }
        await #expect(throws: LedgerError.self) { try await ledger.challenge("c-none", of: "bob", o) }
    }

    @Test(arguments: StorageKind.all) func anUnknownUserHasEmptyAnswers(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.reg("phone", "10:00:00", via: "initial"))
        let o = QueryOptions(asOf: t("2026-04-01T11:00:00Z"))
        #expect(try await ledger.devices(of: "nobody", o).json["devices"] == .array([]))
        #expect(try await ledger.cooling(of: "nobody", o).json == .object([("user", .string("nobody")), ("active", .bool(false)), ("until", .null), ("statusCode", .int(100))]))
        #expect(try await ledger.pending(of: "nobody", o).json == .array([]))
        #expect(try await ledger.history("nobody", o).isEmpty)
        #expect(await refusal { _ = try await ledger.challenge("c1", of: "nobody", o).json }?.code == .challengeNotFound)
    }

    @Test(arguments: StorageKind.all) func theChallengeViewHidesTheOutcomeFromTheRequester(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText([
            Self.reg("phone", "10:00:00", via: "initial"),
            Self.ev("challenge.issued", "10:01:00", #"{"challengeId":"c1","action":"update_profile","requestingDeviceId":"web","expiresAt":"2026-04-01T10:02:00Z","context":{"app":"portal","bindingMessage":"Change e-mail"}}"#),
        ].joined(separator: "\n"))
        let o = QueryOptions(asOf: t("2026-04-01T10:01:30Z"))
        let pending = try await ledger.pending(of: "u", o).json.arrayValue!
        #expect(pending.count == 1)
        #expect(pending[0]["action"] == .string("update_profile"))
        #expect(pending[0]["context"] == .object([("app", .string("portal")), ("bindingMessage", .string("Change e-mail"))]))
        var r = o
        r.asRequester = true
        #expect(try await ledger.challenge("c1", of: "u", r).json == .object([("challengeId", .string("c1")), ("status", .string("pending"))]))
        #expect(try await ledger.challenge("c1", of: "u", o).json["outcome"] == .string("pending"))
    }
}
