import AuthLedger
@testable import AuthLedgerServer
@testable import AuthLedgerSharedSignals
import Foundation
import Hummingbird
import JWTKit
import ServiceLifecycle
import AuthLedgerTestSupport
import Testing

/// The Shared Signals transmitter (docs/SHARED-SIGNALS.md). The third-party check of
/// the SETs (joserfc) is tools/ssf-interop; these tests pin the transmitter's own
/// behaviour: metadata, keys, stream management, the mapping, push and poll.
@Suite(.timeLimit(.minutes(3))) struct SharedSignalsTests {
    static func configure(_ c: inout ServerConfiguration) {
        c.sharedSignals.retryInitial = .milliseconds(20)
        c.sharedSignals.retryMax = .milliseconds(100)
        c.sharedSignals.pollWait = .milliseconds(300)
        c.sharedSignals.checkpointInterval = .milliseconds(20)
    }

    @Test(arguments: StorageKind.all) func metadataAndKeysArePublishedAndKeptPrivate(_ storage: StorageKind) async throws {
        try await withServer(storage, configure: Self.configure) { s in
            var r = try await s.call(.GET, "/.well-known/ssf-configuration", token: nil)
            #expect(r.status == 200)
            #expect(r["issuer"] == .string(s.base))
            #expect(r["spec_version"] == .string("1_0"))
            #expect(r["jwks_uri"] == .string(s.base + "/ssf/jwks"))
            #expect(r["configuration_endpoint"] == .string(s.base + "/ssf/streams"))
            #expect(r["status_endpoint"] == .string(s.base + "/ssf/status"))
            #expect(r["verification_endpoint"] == .string(s.base + "/ssf/verify"))
            #expect(r["delivery_methods_supported"] == .array([.string("urn:ietf:rfc:8935"), .string("urn:ietf:rfc:8936")]))
            #expect(r["authorization_schemes"]?.arrayValue?.contains(.object([("spec_urn", .string("urn:ietf:rfc:6749"))])) == true)

            r = try await s.call(.GET, "/ssf/jwks", token: nil)
            let keys = try #require(r["keys"]?.arrayValue)
            #expect(keys.count == 1)
            let k = keys[0]
            #expect(k["kty"] == .string("RSA") && k["alg"] == .string("RS256") && k["use"] == .string("sig"))
            let n = try #require(Data(base64urlText: k["n"]?.stringValue ?? ""))
            #expect(n.count * 8 >= 2048)
            #expect(k["kid"]?.stringValue == SSFKeys.thumbprint(n: k["n"]!.stringValue!, e: k["e"]!.stringValue!))

            let dir = (s.dir as NSString).appendingPathComponent("ssf-keys")
            #expect(try permissions(dir) == 0o700)
            let files = try FileManager.default.contentsOfDirectory(atPath: dir)
            #expect(files.contains { $0.hasPrefix("rs256-") && $0.hasSuffix(".pem") })
            #expect(!files.contains { $0.hasSuffix(".tmp") })
            for f in files { #expect(try permissions((dir as NSString).appendingPathComponent(f)) == 0o600) }
        }
    }

    @Test(arguments: StorageKind.all) func rotationPublishesTheNewKeyAndKeepsTheOldOneForARetention(_ storage: StorageKind) async throws {
        try await withServer(storage, configure: Self.configure) { s in
            let old = try await s.call(.GET, "/ssf/jwks", token: nil)["keys"]?.arrayValue?.first?["kid"]
            var r = try await s.call(.POST, "/ssf/keys/rotate", token: "reader-token")
            #expect(r.status == 403)
            r = try await s.call(.POST, "/ssf/keys/rotate")
            #expect(r.status == 200)
            let new = try #require(r["kid"])
            #expect(new != old)
            let kids = try await s.call(.GET, "/ssf/jwks", token: nil)["keys"]?.arrayValue?.compactMap { $0["kid"] }
            #expect(kids == [new, old!])
        }
        // With no retention, a replaced key leaves the JWKS at once and its file at the next rotation.
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keys = try SSFKeys(directory: dir, retention: .zero)
        let first = keys.current.kid
        let second = try keys.rotate()
        #expect(keys.published.map(\.kid) == [second])
        #expect(keys.current.kid == second && second != first)
        let third = try keys.rotate()
        let pems = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".pem") }
        #expect(pems.count == 1 && pems[0].contains(third))
        // Another process's key directory view picks the rotation up (a second instance).
        let again = try SSFKeys(directory: dir, retention: .zero)
        #expect(again.current.kid == keys.current.kid)
    }

    @Test(arguments: StorageKind.all) func streamsAreManagedAsSSFSaysAndStoredDurably(_ storage: StorageKind) async throws {
        let place = TestStore(storage)
        defer { place.remove() }
        var pushId = ""
        do {
            let s = try await TestServer.start(at: place, configure: Self.configure)
            var r = try await s.call(.POST, "/ssf/streams", token: "reader-token", body: "{}")
            #expect(r.status == 403)
            r = try await s.call(.POST, "/ssf/streams", body: #"""
            {"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"http://127.0.0.1:9/receiver","authorization_header":"Bearer very-secret-value"},
             "events_requested":["https://schemas.openid.net/secevent/caep/event-type/session-revoked","urn:unknown"],"description":"push one"}
            """#)
            #expect(r.status == 201)
            pushId = try #require(r["stream_id"]?.stringValue)
            #expect(r["iss"] == .string(s.base))
            #expect(r["aud"] == .string("http://127.0.0.1:9/receiver"))
            #expect(r["delivery"] == .object([("method", .string("urn:ietf:rfc:8935")), ("endpoint_url", .string("http://127.0.0.1:9/receiver"))]))
            #expect(r["events_delivered"] == .array([.string(SSFEventType.sessionRevoked.rawValue)]))
            #expect(r["events_supported"]?.arrayValue?.count == 3)
            #expect(!r.body.contains("very-secret-value"))
            // The authorization header is sealed in the store (LMDB: its file's bytes)
            if storage == .lmdb {
                let raw = try #require(FileManager.default.contents(atPath: (s.dir as NSString).appendingPathComponent("data.mdb")))
                #expect(raw.range(of: Data("very-secret-value".utf8)) == nil)
                #expect(raw.range(of: Data("push one".utf8)) != nil)
            }

            r = try await s.call(.POST, "/ssf/streams", body: #"{"description":"poll one"}"#)
            #expect(r.status == 201)
            let pollId = try #require(r["stream_id"]?.stringValue)
            #expect(r["delivery"]?["method"] == .string("urn:ietf:rfc:8936"))
            #expect(r["delivery"]?["endpoint_url"] == .string(s.base + "/ssf/poll/" + pollId))
            #expect(r["events_delivered"]?.arrayValue?.count == 3)

            r = try await s.call(.GET, "/ssf/streams")
            #expect(r.json?.arrayValue?.compactMap { $0["stream_id"]?.stringValue } == [pushId, pollId])
            r = try await s.call(.PATCH, "/ssf/streams", body: #"{"stream_id":"\#(pollId)","description":"renamed"}"#)
            #expect(r.status == 200 && r["description"] == .string("renamed") && r["events_delivered"]?.arrayValue?.count == 3)
            r = try await s.call(.PATCH, "/ssf/streams", body: #"{"stream_id":"\#(pollId)","aud":"someone-else"}"#)
            #expect(r.status == 400 && r["field"] == .string("aud"))
            r = try await s.call(.PUT, "/ssf/streams", body: #"{"stream_id":"\#(pollId)","events_requested":[]}"#)
            #expect(r.status == 200 && r["description"] == nil && r["events_delivered"] == .array([]))
            // Bad input: a clear 400 naming the field, or 404
            for (body, field) in [(#"{"delivery":{"method":"urn:ietf:rfc:8935"}}"#, "delivery.endpoint_url"),
                                  (#"{"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"ftp://x/y"}}"#, "delivery.endpoint_url"),
                                  (#"{"delivery":{"method":"carrier-pigeon"}}"#, "delivery.method"),
                                  (#"{"events_requested":"all"}"#, "events_requested"),
                                  (#"{"stream_id":"abc"}"#, "stream_id"),
                                  (#"{"surprise":1}"#, "surprise")] {
                r = try await s.call(.POST, "/ssf/streams", body: body)
                #expect(r.status == 400 && r["field"] == .string(field), "\(body)")
            }
            r = try await s.call(.POST, "/ssf/streams", body: "[")
            #expect(r.status == 400)
            r = try await s.call(.GET, "/ssf/streams?stream_id=0123456789abcdef0123456789abcdef")
            #expect(r.status == 404)
            r = try await s.call(.GET, "/ssf/status?stream_id=nonsense")
            #expect(r.status == 404)

            // Status and verification
            r = try await s.call(.GET, "/ssf/status?stream_id=\(pollId)")
            #expect(r["status"] == .string("enabled") && r["delivered_through"] == .int(0))
            r = try await s.call(.POST, "/ssf/status", body: #"{"stream_id":"\#(pollId)","status":"paused","reason":"maintenance"}"#)
            #expect(r.json == .object([("stream_id", .string(pollId)), ("status", .string("paused")), ("reason", .string("maintenance"))]))
            r = try await s.call(.POST, "/ssf/status", body: #"{"stream_id":"\#(pollId)","status":"asleep"}"#)
            #expect(r.status == 400 && r["field"] == .string("status"))
            r = try await s.call(.POST, "/ssf/verify", body: #"{"stream_id":"\#(pushId)","state":"abc"}"#)
            #expect(r.status == 204)
            for _ in 0..<20 { r = try await s.call(.POST, "/ssf/verify", body: #"{"stream_id":"\#(pollId)"}"#) }
            // The transmitter's refusal, answered as the API's own 429 (byte for byte as before the module split)
            #expect(r.status == 429)
            #expect(r.body == #"{"error":"rate_limited","message":"16 verification events are already waiting on this stream"}"# + "\n")
            #expect(r.headers.first(name: "Content-Type") == "application/json" && r.headers.first(name: "WWW-Authenticate") == nil)
            try await s.stop()
        }
        // After a restart, the streams are there
        let s = try await TestServer.start(at: place, configure: Self.configure)
        var r = try await s.call(.GET, "/ssf/streams?stream_id=\(pushId)")
        #expect(r["description"] == .string("push one"))
        r = try await s.call(.DELETE, "/ssf/streams?stream_id=\(pushId)")
        #expect(r.status == 204)
        r = try await s.call(.DELETE, "/ssf/streams?stream_id=\(pushId)")
        #expect(r.status == 404)
        #expect(try await s.call(.GET, "/ssf/streams").json?.arrayValue?.count == 1)
        try await s.stop()
    }

    @Test func ledgerEventsMapToCAEPAndRISCEventsAsDocumented() throws {
        func recorded(_ json: String, seq: UInt64 = 7) throws -> RecordedEvent {
            var input = try EventDecoder.decode(try JSON.parse(Array(json.utf8)))
            input.event.id = EventID.random()
            return RecordedEvent(event: input.event, seq: seq, version: 1, prev: .zero, hash: .zero)
        }
        let at = #""at":"2026-03-01T09:00:05.250Z""#
        let cases: [(String, SSFEventType, String?, String?, Bool)] = [
            (#"{"type":"device.registered","user":"u1",\#(at),"data":{"deviceId":"d1","name":"Phone one","kind":"mobile","binding":"permanent","via":"initial"},"meta":{"actor":"user"}}"#, .credentialChange, "create", "user", true),
            (#"{"type":"device.renamed","user":"u1",\#(at),"data":{"deviceId":"d1","name":"Phone two"},"meta":{"actor":"device:d1"}}"#, .credentialChange, "update", "user", true),
            (#"{"type":"device.push_token_updated","user":"u1",\#(at),"data":{"deviceId":"d1","pushToken":"tok"},"meta":{"actor":"service:push"}}"#, .credentialChange, "update", "system", true),
            (#"{"type":"device.revoked","user":"u1",\#(at),"data":{"deviceId":"d1","reason":"lost"},"meta":{"actor":"admin:ops"}}"#, .credentialChange, "revoke", "admin", true),
            (#"{"type":"device.all_revoked","user":"u1",\#(at),"data":{}}"#, .sessionRevoked, nil, nil, false),
            (#"{"type":"otp.verified","user":"u1",\#(at),"data":{"otpId":"o1","grantId":"g1","grantExpiresAt":"2026-03-01T09:10:00Z"},"meta":{"actor":"system"}}"#, .recoveryActivated, nil, "system", false),
        ]
        for (json, type, change, entity, hasDevice) in cases {
            let e = try recorded(json)
            let m = try #require(SSFEventMapping.map(e), "\(json)")
            #expect(m.type == type)
            #expect(m.body["change_type"]?.stringValue == change)
            #expect(m.body["credential_type"]?.stringValue == (change == nil ? nil : "app"))
            #expect(m.body["initiating_entity"]?.stringValue == entity)
            #expect(m.body["event_timestamp"] == .int(Timestamp(rfc3339: "2026-03-01T09:00:05Z")!.milliseconds / 1000))
            #expect((m.body["reason_admin"]?["en"]?.stringValue ?? "").isEmpty == false)
            #expect(m.subject["format"] == .string("complex"))
            #expect(m.subject["user"] == .object([("format", .string("opaque")), ("id", .string("u1"))]))
            #expect((m.subject["device"] != nil) == hasDevice)
            // No personal value in a SET
            let text = m.body.serialized() + m.subject.serialized()
            #expect(!text.contains("Phone") && !text.contains("tok\""))
        }
        #expect(try SSFEventMapping.map(recorded(#"{"type":"device.revoked","user":"u1",\#(at),"data":{"deviceId":"d1","reason":"lost"}}"#))?.body["reason_admin"]?["en"] == .string("Device revoked: lost"))
        for other in [#"{"type":"device.accessed","user":"u1",\#(at),"data":{"deviceId":"d1"}}"#,
                      #"{"type":"policy.set",\#(at),"data":{"coolingSeconds":0}}"#] {
            #expect(try SSFEventMapping.map(recorded(other)) == nil)
        }
        // jti: per stream and seq, stable; verification jtis apart
        var s = SSFStream(id: "0123456789abcdef0123456789abcdef", aud: "a", method: .poll, cursor: 0)
        #expect(s.jti(seq: 42) == "0123456789abcdef0123456789abcdef-42")
        #expect(s.target(ofJTI: s.jti(seq: 42)) == .event(42))
        #expect(s.target(ofJTI: s.jti(verification: 3)) == .verification(3))
        #expect(s.target(ofJTI: "ffffffffffffffffffffffffffffffff-42") == nil)
        s.eventsRequested = [SSFEventType.recoveryActivated.rawValue]
        #expect(s.filter.types == [.otpVerified])
    }

    @Test(arguments: StorageKind.all) func pushDeliversEverySignedSETInOrderThroughAnOutageAndARestart(_ storage: StorageKind) async throws {
        let receiver = try await TestReceiver.start()
        defer { Task { await receiver.stop() } }
        let place = TestStore(storage)
        defer { place.remove() }
        var s = try await TestServer.start(at: place, configure: Self.configure)
        var issuers = [s.base]
        try await s.call(.PUT, "/v1/policy", body: #"{"coolingSeconds":0}"#)
        var r = try await s.call(.POST, "/ssf/streams", body: #"""
        {"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"\#(receiver.url)","authorization_header":"Bearer recv"}}
        """#)
        let id = try #require(r["stream_id"]?.stringValue)
        r = try await s.call(.POST, "/ssf/verify", body: #"{"stream_id":"\#(id)","state":"st-1"}"#)
        #expect(r.status == 204)
        let jwks = try await s.call(.GET, "/ssf/jwks", token: nil).body

        // Events of three users (seq 2…7); the receiver refuses the first rename (400), then goes down for a while
        receiver.refuse(seq: 3)
        for u in ["u1", "u2", "u3"] {
            try await s.call(.POST, "/v1/users/\(u)/devices", body: #"{"deviceId":"d1","name":"Phone one","actor":"user"}"#)
            try await s.call(.PATCH, "/v1/users/\(u)/devices/d1", body: #"{"name":"Phone two"}"#)
        }
        try await receiver.waitFor(seqs: 7)
        receiver.setDown(true)
        try await s.call(.DELETE, "/v1/users/u1/devices/d1", body: #"{"reason":"lost"}"#)
        try await s.call(.DELETE, "/v1/users/u2/devices")
        try await receiver.waitForAFailedAttempt()
        #expect(receiver.failedAttempts > 0)
        receiver.setDown(false)
        try await receiver.waitFor(seqs: 9)
        let status = try await s.call(.GET, "/ssf/status?stream_id=\(id)")
        #expect(status["errors"]?.arrayValue?.first?["jti"] == .string("\(id)-3"))
        #expect(status["errors"]?.arrayValue?.first?["err"] == .string("invalid_request"))

        // A restart: delivery resumes after the checkpoint
        try await s.stop()
        s = try await TestServer.start(at: place, configure: Self.configure)
        issuers.append(s.base)  // a new port: a new default issuer
        try await s.call(.POST, "/v1/users/u3/devices/d1/access")  // not a Security Event
        try await s.call(.DELETE, "/v1/users/u3/devices/d1")
        try await receiver.waitFor(seqs: 11)
        try await s.stop()

        // Every SET verifies against the JWKS (jwt-kit), in seq order; duplicates only by jti
        let keys = try await JWTKeyCollection().add(jwksJSON: jwks)
        var first: [String: JSON] = [:]
        var order: [UInt64] = []
        for token in receiver.tokens {
            let set = try await keys.verify(token, as: SETPayload.self)
            let claims = set.claims
            let jti = try #require(claims["jti"]?.stringValue)
            #expect(issuers.contains(claims["iss"]?.stringValue ?? "") && claims["aud"] == .string(receiver.url))
            #expect(claims["sub"] == nil && claims["exp"] == nil)
            if let prev = first[jti] {
                #expect(prev["events"] == claims["events"] && prev["txn"] == claims["txn"])
                continue
            }
            first[jti] = claims
            if let seq = UInt64(jti.split(separator: "-").last!) { order.append(seq) }
        }
        #expect(order == [2, 4, 5, 6, 7, 8, 9, 11])
        #expect(first["\(id)-v1"]?["events"]?[SSFEventType.verification]?["state"] == .string("st-1"))
        #expect(receiver.headers.allSatisfy { $0.contentType == "application/secevent+jwt" && $0.authorization == "Bearer recv" })
    }

    @Test(arguments: StorageKind.all) func pollReturnsUnacknowledgedSETsAndMovesTheCheckpointOverAcks(_ storage: StorageKind) async throws {
        try await withServer(storage, configure: Self.configure) { s in
            var r = try await s.call(.POST, "/ssf/streams", body: "{}")
            let id = try #require(r["stream_id"]?.stringValue)
            let path = "/ssf/poll/\(id)"
            // Nothing yet: an immediate answer, and a long poll that ends after the wait
            r = try await s.call(.POST, path, token: "reader-token", body: #"{"returnImmediately":true}"#)
            #expect(r.json == .object([("sets", .object([])), ("moreAvailable", .bool(false))]))
            r = try await s.call(.POST, path, token: "reader-token", body: "")
            #expect(r["sets"] == .object([]))
            r = try await s.call(.POST, path, token: "writer-token", body: "{}")
            #expect(r.status == 403)

            try await s.call(.POST, "/v1/events", body: Fixture.array([
                Fixture.registered("alice", "phone"), Fixture.accessed("alice", "phone", second: 10),
                Fixture.registered("bob", "phone"), Fixture.registered("carol", "phone"), Fixture.registered("dave", "phone"),
            ]))
            r = try await s.call(.POST, path, token: "reader-token", body: #"{"maxEvents":2,"returnImmediately":true}"#)
            #expect(r["sets"]?.objectValue?.map(\.0) == ["\(id)-1", "\(id)-3"])
            #expect(r["moreAvailable"] == .bool(true))
            // Unacknowledged: returned again; an out-of-order ack and an error report
            r = try await s.call(.POST, path, token: "reader-token", body: #"""
            {"ack":["\#(id)-3"],"setErrs":{"\#(id)-4":{"err":"invalid_audience","description":"not for us"}},"returnImmediately":true}
            """#)
            #expect(r["sets"]?.objectValue?.map(\.0) == ["\(id)-1", "\(id)-5"])
            #expect(r["moreAvailable"] == .bool(false))
            var st = try await s.call(.GET, "/ssf/status?stream_id=\(id)")
            #expect(st["delivered_through"] == .int(0))
            #expect(st["errors"]?.arrayValue?.first?["err"] == .string("invalid_audience"))
            // Acking 1 moves the checkpoint over 1…4 (2 is not a Security Event); maxEvents 0 only acks
            r = try await s.call(.POST, path, token: "reader-token", body: #"{"ack":["\#(id)-1"],"maxEvents":0}"#)
            #expect(r["sets"] == .object([]))
            st = try await s.call(.GET, "/ssf/status?stream_id=\(id)")
            #expect(st["delivered_through"] == .int(4))
            // A verification event comes first; a waiting poll is answered when an event arrives
            try await s.call(.POST, "/ssf/verify", body: #"{"stream_id":"\#(id)","state":"v"}"#)
            r = try await s.call(.POST, path, token: "reader-token", body: #"{"returnImmediately":true}"#)
            #expect(r["sets"]?.objectValue?.map(\.0) == ["\(id)-v1", "\(id)-5"])
            r = try await s.call(.POST, path, token: "reader-token", body: #"{"ack":["\#(id)-v1","\#(id)-5"],"returnImmediately":true}"#)
            #expect(r["sets"] == .object([]))
            st = try await s.call(.GET, "/ssf/status?stream_id=\(id)")
            #expect(st["delivered_through"] == .int(5) && st["pending_verifications"] == .int(0))
            // Paused: nothing; disabled then enabled: only what comes after
            try await s.call(.POST, "/ssf/status", body: #"{"stream_id":"\#(id)","status":"disabled"}"#)
            try await s.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("erin", "phone")]))
            r = try await s.call(.POST, path, token: "reader-token", body: #"{"returnImmediately":true}"#)
            #expect(r["sets"] == .object([]))
            try await s.call(.POST, "/ssf/status", body: #"{"stream_id":"\#(id)","status":"enabled"}"#)
            try await s.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("frank", "phone")]))
            r = try await s.call(.POST, path, token: "reader-token", body: #"{"returnImmediately":true}"#)
            #expect(r["sets"]?.objectValue?.map(\.0) == ["\(id)-7"])
            // Bad input
            for body in [#"{"maxEvents":-1}"#, #"{"ack":"x"}"#, #"{"returnImmediately":"yes"}"#, #"{"setErrs":{"a":{}}}"#, #"{"other":1}"#, "[]"] {
                r = try await s.call(.POST, path, token: "reader-token", body: body)
                #expect(r.status == 400, "\(body)")
            }
            r = try await s.call(.POST, "/ssf/poll/0123456789abcdef0123456789abcdef", token: "reader-token", body: "{}")
            #expect(r.status == 404)
        }
    }
}

private func permissions(_ path: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
