import AuthLedger
@testable import AuthLedgerServer
import Foundation
import AuthLedgerTestSupport
import Testing

@Suite(.timeLimit(.minutes(2))) struct CommandRouteTests {
    @Test(arguments: StorageKind.all) func aUsersDeviceLifeOverHTTP(_ storage: StorageKind) async throws {
        let clock = TestClock()
        try await withServer(storage, clock: clock) { s in
            // Given a first device
            var r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"iphone","name":"  Alice iPhone ","kind":"mobile","platform":"ios"}"#)
            #expect(r.status == 201)
            #expect(r["events"]?.arrayValue?.first?["type"] == .string("device.registered"))

            r = try await s.call(.GET, "/v1/users/alice/devices?current=iphone", token: "reader-token")
            #expect(r.status == 200)
            #expect(r["position"] == .int(1))
            let phone = try #require(r["devices"]?.arrayValue?.first)
            #expect(phone["name"] == .string("Alice iPhone"))
            #expect(phone["current"] == .bool(true))
            #expect(phone["via"] == .string("initial"))

            // A verification request leaves a pending device
            r = try await s.call(.POST, "/v1/users/alice/verification-requests", body: #"{"deviceId":"tablet","name":"Alice iPad","kind":"tablet"}"#)
            #expect(r.status == 201)
            r = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
            let tablet = r["devices"]?.arrayValue?.first { $0["deviceId"] == .string("tablet") }
            #expect(tablet?["status"] == .string("pending"))
            #expect(tablet?["registeredAt"] == .null)

            // A login challenge from a new laptop, approved by the phone
            r = try await s.call(.POST, "/v1/users/alice/challenges", body: #"{"requestingDeviceId":"laptop","action":"login","context":{"ip":"10.0.0.1"}}"#)
            #expect(r.status == 201)
            let cid = try #require(r["challengeId"]?.stringValue)
            r = try await s.call(.GET, "/v1/users/alice/pending", token: "reader-token")
            #expect(r.json?.arrayValue?.count == 1)
            #expect(r.json?.arrayValue?.first?["context"]?["ip"] == .string("10.0.0.1"))
            r = try await s.call(.GET, "/v1/users/alice/challenges/\(cid)?view=requester", token: "reader-token")
            #expect(r.json == .object([("challengeId", .string(cid)), ("status", .string("pending"))]))
            r = try await s.call(.POST, "/v1/users/alice/challenges/\(cid)/approve", body: #"{"deviceId":"iphone","userVerified":true}"#)
            #expect(r.status == 200)
            r = try await s.call(.GET, "/v1/users/alice/challenges/\(cid)", token: "reader-token")
            #expect(r["outcome"] == .string("approved"))

            // The approval lets the laptop register (via trusted_device, inferred)
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"laptop","name":"Work laptop","kind":"desktop","challengeId":"\#(cid)"}"#)
            #expect(r.status == 201)

            // Which opened a cooling window: rename refused with 423 and until
            r = try await s.call(.PATCH, "/v1/users/alice/devices/iphone", body: #"{"name":"My iPhone"}"#)
            #expect(r.status == 423)
            #expect(r.error == "cooling_period_active")
            #expect(r["until"] == .string(clock.now.adding(seconds: 300).formatted))
            r = try await s.call(.GET, "/v1/users/alice/cooling", token: "reader-token")
            #expect(r["active"] == .bool(true) && r["statusCode"] == .int(146))

            clock.advance(seconds: 301)
            r = try await s.call(.PATCH, "/v1/users/alice/devices/iphone", body: #"{"name":"My iPhone","actor":"device:iphone"}"#)
            #expect(r.status == 200)
            r = try await s.call(.POST, "/v1/users/alice/devices/iphone/access")
            #expect(r.status == 200)
            r = try await s.call(.PATCH, "/v1/users/alice/devices/iphone", body: #"{"pushToken":"apns-123"}"#)
            #expect(r.status == 200)

            // OTP: a wrong code counts, the right one yields a grant that registers a device
            r = try await s.call(.POST, "/v1/users/alice/otps", body: #"{"channel":"email","target":"alice@example.com"}"#)
            #expect(r.status == 201)
            let otp = try #require(r["otpId"]?.stringValue)
            let code = try #require(r["code"]?.stringValue)
            #expect(code.count == 6)
            let wrong = String(code.map { $0 == "9" ? "0" : Character(String(($0.wholeNumberValue ?? 0) + 1)) })
            r = try await s.call(.POST, "/v1/users/alice/otps/\(otp)/verify", body: #"{"code":"\#(wrong)"}"#)
            #expect(r.status == 409)
            #expect(r.error == "otp_invalid")
            #expect(r["remainingAttempts"] == .int(4))
            r = try await s.call(.POST, "/v1/users/alice/otps/\(otp)/verify", body: #"{"code":"\#(code)"}"#)
            #expect(r.status == 200)
            let grant = try #require(r["grantId"]?.stringValue)
            clock.advance(seconds: 301)
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"desktop","name":"Home desktop","kind":"desktop","grantId":"\#(grant)"}"#)
            #expect(r.status == 201)

            // Revoke one, then all
            clock.advance(seconds: 301)
            r = try await s.call(.DELETE, "/v1/users/alice/devices/tablet", body: #"{"reason":"never verified"}"#)
            #expect(r.status == 200)
            clock.advance(seconds: 301)
            r = try await s.call(.DELETE, "/v1/users/alice/devices", body: #"{"reason":"lost","actor":"device:iphone"}"#)
            #expect(r.status == 200)
            #expect(r["sessionEnded"] == .bool(true))
            r = try await s.call(.GET, "/v1/users/alice/devices?includeRevoked=true", token: "reader-token")
            #expect(r["devices"]?.arrayValue?.allSatisfy { $0["status"] == .string("revoked") } == true)

            // History: every event of the stream, recorded form
            r = try await s.call(.GET, "/v1/users/alice/history", token: "reader-token")
            let history = try #require(r.json?.arrayValue)
            #expect(history.map { $0["version"]?.intValue } == (1...history.count).map { Int64($0) })
            #expect(history.last?["type"] == .string("device.all_revoked"))
            r = try await s.call(.GET, "/v1/users/alice/history?at=2", token: "reader-token")
            #expect(r.json?.arrayValue?.count == 2)

            // Policy (admin), export and verify (audit), health, metrics
            r = try await s.call(.PUT, "/v1/policy", body: #"{"coolingSeconds":60,"actor":"admin:ops"}"#)
            #expect(r.status == 200)
            #expect(r["events"]?.arrayValue?.first?["type"] == .string("policy.set"))
            r = try await s.call(.GET, "/v1/export", token: "auditor-token")
            #expect(r.status == 200)
            let lines = r.body.split(separator: "\n").map { try? JSON.parse(String($0)) }
            #expect(lines.map { $0?["seq"]?.intValue } == (1...lines.count).map { Int64($0) })
            r = try await s.call(.GET, "/v1/export?user=alice&from=3", token: "auditor-token")
            #expect(r.body.split(separator: "\n").first.flatMap { try? JSON.parse(String($0)) }?["seq"] == .int(3))
            r = try await s.call(.GET, "/v1/verify", token: "auditor-token")
            #expect(r["ok"] == .bool(true))
            #expect(r["head"]?["seq"] == .int(Int64(lines.count)))
            r = try await s.call(.GET, "/health", token: nil)
            #expect(r.status == 200 && r["status"] == .string("ok"))
            let metrics = try await s.call(.GET, "/metrics", token: "reader-token").body
            #expect(metrics.contains("authledger_appended_events_total"))
            #expect(metrics.contains(#"authledger_refusals_total{code="cooling_period_active"}"#))
            #expect(metrics.contains("authledger_append_duration_seconds_bucket"))
        }
    }

    @Test(arguments: StorageKind.all) func pathParametersArePercentDecoded(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            var r = try await s.call(.POST, "/v1/users/bob%20smith%40example.com/devices", body: #"{"deviceId":"phone 1","name":"Bob phone"}"#)
            #expect(r.status == 201)
            r = try await s.call(.POST, "/v1/users/bob%20smith%40example.com/devices/phone%201/access")
            #expect(r.status == 200)
            r = try await s.call(.GET, "/v1/users/bob%20smith%40example.com/history", token: "reader-token")
            #expect(r.json?.arrayValue?.first?["user"] == .string("bob smith@example.com"))
            #expect(r.json?.arrayValue?.count == 2)
        }
        #expect(percentDecoded("a%20b%2Fc") == "a b/c")
        #expect(percentDecoded("%E2%82%AC") == "€")
        #expect(percentDecoded("bad%zz") == nil)
        #expect(percentDecoded("%FF") == nil)
        #expect(percentDecoded("50%") == nil)
    }

    @Test(arguments: StorageKind.all) func denyAndApproverRules(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await s.call(.POST, "/v1/users/bob/devices", body: #"{"deviceId":"phone","name":"Bob phone"}"#)
            var r = try await s.call(.POST, "/v1/users/bob/challenges", body: #"{"requestingDeviceId":"web","action":"transaction"}"#)
            let cid = try #require(r["challengeId"]?.stringValue)
            r = try await s.call(.POST, "/v1/users/bob/challenges/\(cid)/deny", body: #"{"deviceId":"web"}"#)
            #expect(r.status == 409 && r.error == "approver_not_trusted")
            r = try await s.call(.POST, "/v1/users/bob/challenges/\(cid)/deny", body: #"{"deviceId":"phone"}"#)
            #expect(r.status == 200)
            r = try await s.call(.POST, "/v1/users/bob/challenges/\(cid)/approve", body: #"{"deviceId":"phone"}"#)
            #expect(r.status == 409 && r.error == "challenge_resolved")
            r = try await s.call(.GET, "/v1/users/bob/challenges/\(cid)?view=requester", token: "reader-token")
            #expect(r["status"] == .string("not_approved"))
            #expect(r["outcome"] == nil)
        }
    }

    @Test(arguments: StorageKind.all) func appendingEventsWithExpectedVersions(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            let id1 = "6f1c2d3e-0000-4000-8000-000000000001"
            let batch = "[" + Fixture.registered("bob", "phone").dropLast() + #","id":"\#(id1)"}"# + "," + Fixture.accessed("bob", "phone", second: 60) + "]"
            var r = try await s.call(.POST, "/v1/events", body: batch)
            #expect(r.status == 201)
            #expect(r["appended"] == .int(2))
            #expect(r["head"]?["seq"] == .int(2))
            // The identical event again is skipped
            r = try await s.call(.POST, "/v1/events", body: "[" + Fixture.registered("bob", "phone").dropLast() + #","id":"\#(id1)"}]"#)
            #expect(r.status == 200 && r["duplicates"] == .int(1) && r["appended"] == .int(0))
            // Optimistic concurrency
            r = try await s.call(.POST, "/v1/events", body: #"{"events":[\#(Fixture.accessed("bob", "phone", second: 120))],"expectedVersion":{"bob":1}}"#)
            #expect(r.status == 409 && r.error == "version_conflict")
            r = try await s.call(.POST, "/v1/events", body: #"{"events":[\#(Fixture.accessed("bob", "phone", second: 120))],"expectedVersion":{"bob":2}}"#)
            #expect(r.status == 201)
            let perEvent = Fixture.accessed("bob", "phone", second: 180).dropLast() + #","expectedVersion":3}"#
            r = try await s.call(.POST, "/v1/events", body: "[\(perEvent)]")
            #expect(r.status == 201)
            r = try await s.call(.POST, "/v1/events", body: "[\(perEvent)]")
            #expect(r.status == 409 && r.error == "version_conflict")
            // Strict decoding, with the index of the refused event and the field
            let bad = #"{"type":"device.accessed","user":"bob","at":"2026-03-01T08:10:00Z","data":{"deviceId":"phone","color":"red"}}"#
            r = try await s.call(.POST, "/v1/events", body: "[\(Fixture.accessed("bob", "phone", second: 300)),\(bad)]")
            #expect(r.status == 400 && r.error == "invalid_event")
            #expect(r["field"] == .string("data.color") && r["index"] == .int(1))
            r = try await s.call(.POST, "/v1/events", body: #"{"type":"device.accessed"}"#)
            #expect(r.status == 400 && r["field"] == .string("type"))
            // A rule refusal appends nothing of the batch
            r = try await s.call(.POST, "/v1/events", body: Fixture.array([Fixture.accessed("bob", "phone", second: 400), Fixture.accessed("bob", "ghost", second: 401)]))
            #expect(r.status == 404 && r.error == "device_not_found" && r["index"] == .int(1))
            r = try await s.call(.GET, "/v1/users/bob/history", token: "reader-token")
            #expect(r.json?.arrayValue?.count == 4)
        }
    }
}
