import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

@Suite(.timeLimit(.minutes(3))) struct WatchRouteTests {
    /// alice's phone (seq 1) and bob's (seq 2).
    func seed(_ s: TestServer) async throws {
        let r = try await s.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("alice", "phone"), Fixture.registered("bob", "phone")]))
        #expect(r.status == 201)
    }

    func addLaptop(_ s: TestServer, _ user: String = "alice") async throws {
        let r = try await s.call(.POST, "/v1/users/\(user)/devices", body: #"{"deviceId":"laptop","name":"Laptop","via":"admin"}"#)
        #expect(r.status == 201, "\(r.body)")
    }

    func issue(_ s: TestServer) async throws -> String {
        let r = try await s.call(.POST, "/v1/users/alice/challenges", token: "writer-token", body: #"{"requestingDeviceId":"tablet"}"#)
        #expect(r.status == 201, "\(r.body)")
        return try #require(r["challengeId"]?.stringValue)
    }

    /// Waits for events after the first `count` until one satisfies `found`.
    func next(_ sub: SSEClient, after count: Int, _ found: (SSEEvent) -> Bool = { _ in true }) async throws -> SSEEvent {
        for _ in 0..<400 {
            if let e = sub.events.dropFirst(count).first(where: found) { return e }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw TestFailure("no such event after the first \(count): \(sub.events.map { "\($0.event ?? "") \($0.id ?? 0)" })")
    }

    @Test(arguments: StorageKind.all) func aQueryRouteWatchesItsAnswerAndResumes(_ storage: StorageKind) async throws {
        try await withServer(storage, configure: { $0.heartbeatInterval = .milliseconds(300) }) { s in
            try await seed(s)
            let sub = try await s.subscribe("/v1/users/alice/devices?watch=true")
            #expect(sub.status == 200 && sub.contentType?.hasPrefix("text/event-stream") == true)
            let snapshot = try await sub.waitFor(count: 1)[0]
            let plain = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
            #expect(snapshot.event == "snapshot" && snapshot.id == 2)
            #expect(snapshot.json == plain.json)
            try await addLaptop(s)
            let changed = try await next(sub, after: 1) { $0.event == "changed" }
            #expect(changed.id == 3 && changed.json?["position"] == .int(3))
            #expect(changed.json?["devices"]?.arrayValue?.count == 2)
            // Idle: progress with the position, at the heartbeat interval
            try await s.call(.POST, "/v1/events", body: Fixture.array([Fixture.accessed("bob", "phone", second: 5)]))
            let progress = try await next(sub, after: 2) { $0.event == "progress" && $0.id == 4 }
            #expect(progress.json == .object([("position", .int(4))]))
            sub.close()

            // Resumed where nothing changed: no snapshot, no change
            let quiet = try await s.subscribe("/v1/users/alice/devices?watch=true", lastEventID: 4)
            #expect(try await next(quiet, after: 0).event == "progress")
            #expect(quiet.events.allSatisfy { $0.event == "progress" })
            quiet.close()
            // Resumed from before the change: the current answer as a change
            let behind = try await s.subscribe("/v1/users/alice/devices?watch=true", lastEventID: 2)
            let again = try await next(behind, after: 0)
            let current = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
            #expect(again.event == "changed" && again.json == current.json)
            behind.close()
        }
    }

    @Test(arguments: StorageKind.all) func oneConnectionWatchesManyKeys(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await seed(s)
            let id = try await issue(s)
            let sub = try await s.subscribe("/v1/watch?devices=alice,bob&pending=alice&cooling=carol&challenge=alice:\(id)&view=requester")
            #expect(sub.status == 200)
            let snapshots = try await sub.waitFor(count: 5)
            #expect(snapshots.allSatisfy { $0.event == "snapshot" && $0.id == 3 })
            let keys = snapshots.compactMap { e in e.json.map { "\($0["projection"]?.stringValue ?? ""):\($0["user"]?.stringValue ?? "")" } }
            #expect(keys == ["devices:alice", "devices:bob", "pending:alice", "cooling:carol", "challenge:alice"])
            #expect(snapshots[4].json?["challengeId"] == .string(id))
            #expect(snapshots[4].json?["answer"] == .object([("challengeId", .string(id)), ("status", .string("pending"))]))
            // (Between changes, the stream's heartbeat may send a progress frame: a loaded
            // machine takes longer than its 15 s between two steps of this test.)
            func changes(_ sub: SSEClient, after count: Int, atLeast n: Int) async throws -> [SSEEvent] {
                try await sub.waitUntil { $0.events.dropFirst(count).filter { $0.event == "changed" }.count >= n }
                #expect(sub.events.dropFirst(count).allSatisfy { $0.event == "changed" || $0.event == "progress" })
                return sub.events.dropFirst(count).filter { $0.event == "changed" }
            }
            // bob's laptop changes bob's devices only
            try await addLaptop(s, "bob")
            let bob = try await changes(sub, after: 5, atLeast: 1)[0]
            #expect(bob.id == 4 && bob.json?["user"] == .string("bob") && bob.json?["projection"] == .string("devices"))
            // alice approves: her challenge and her pending list change
            let r = try await s.call(.POST, "/v1/users/alice/challenges/\(id)/approve", token: "writer-token", body: #"{"deviceId":"phone"}"#)
            #expect(r.status == 200, "\(r.body)")
            let after = try await changes(sub, after: 5, atLeast: 3).dropFirst()
            let projections = Set(after.compactMap { $0.json?["projection"]?.stringValue })
            #expect(projections == ["challenge", "pending"] && after.count == 2)
            #expect(after.allSatisfy { $0.id == 5 })
            sub.close()
            // Resuming every key at once
            let resumed = try await s.subscribe("/v1/watch?devices=alice,bob&pending=alice", lastEventID: 3)
            let changed = try await changes(resumed, after: 0, atLeast: 2)
            let changedKeys = changed.map { e -> String in
                let p = e.json?["projection"]?.stringValue ?? "", u = e.json?["user"]?.stringValue ?? ""
                return p + ":" + u
            }
            #expect(Set(changedKeys) == ["devices:bob", "pending:alice"])
            resumed.close()
        }
    }

    @Test func badWatchInputIsRefusedNamingTheParameter() async throws {
        try await withServer { s in
            try await seed(s)
            func refused(_ path: String, _ field: String, lastEventID: String? = nil, token: String = "reader-token", status: Int = 400,
                         sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let r = try await s.call(.GET, path, token: token, headers: lastEventID.map { [("Last-Event-ID", $0)] } ?? [])
                #expect(r.status == status, "\(path): \(r.body)", sourceLocation: sourceLocation)
                if status == 400 { #expect(r["field"] == .string(field), "\(path): \(r.body)", sourceLocation: sourceLocation) }
            }
            try await refused("/v1/users/alice/devices?watch=true&at=1", "at")
            try await refused("/v1/users/alice/cooling?watch=true&asOf=2026-03-01T09:00:00Z", "asOf")
            try await refused("/v1/users/alice/devices?watch=maybe", "watch")
            try await refused("/v1/users/alice/pending?watch=true", "Last-Event-ID", lastEventID: "99")
            try await refused("/v1/users/alice/pending?watch=true", "Last-Event-ID", lastEventID: "abc")
            try await refused("/v1/watch?devices=alice", "Last-Event-ID", lastEventID: "-1")
            // The plain query checks the header too (schemathesis: a malformed one was ignored)
            try await refused("/v1/users/alice/cooling", "Last-Event-ID", lastEventID: "-")
            try await refused("/v1/users/alice/pending?watch=false", "Last-Event-ID", lastEventID: "x1")
            try await refused("/v1/watch?device=alice", "device")
            try await refused("/v1/watch", "devices")
            try await refused("/v1/watch?devices=", "devices")
            try await refused("/v1/watch?devices=alice,,bob", "devices")
            try await refused("/v1/watch?pending=\(String(repeating: "x", count: 300))", "pending")
            try await refused("/v1/watch?challenge=alice", "challenge")
            try await refused("/v1/watch?challenge=alice:", "challenge")
            let many = (0...1000).map { "u\($0)" }.joined(separator: ",")
            try await refused("/v1/watch?cooling=" + many, "cooling")
            try await refused("/v1/users/alice/challenges/c1?wait=0", "wait")
            try await refused("/v1/users/alice/challenges/c1?wait=61", "wait")
            try await refused("/v1/users/alice/challenges/c1?wait=1.5", "wait")
            try await refused("/v1/users/alice/challenges/c1?wait=5&watch=true", "wait")
            // Scope: read
            try await refused("/v1/watch?devices=alice", "", token: "writer-token", status: 403)
            try await refused("/v1/users/alice/devices?watch=true", "", token: "writer-token", status: 403)
            // An unknown challenge as on the plain route
            try await refused("/v1/users/alice/challenges/nope?watch=true", "", status: 404)
            try await refused("/v1/users/alice/challenges/nope?wait=1", "", status: 404)
            // The server still serves
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token").status == 200)
        }
    }

    @Test func watchesCountAgainstTheTokensStreams() async throws {
        try await withServer(configure: { $0.maxSubscribersPerToken = 2 }) { s in
            try await seed(s)
            let a = try await s.subscribe("/v1/events")
            let b = try await s.subscribe("/v1/watch?devices=alice,bob")
            let refused = try await s.call(.GET, "/v1/users/alice/devices?watch=true", token: "reader-token")
            #expect(refused.status == 429 && refused.error == "rate_limited")
            b.close()
            var opened: SSEClient?
            for _ in 0..<100 {
                let c = try await s.subscribe("/v1/users/alice/devices?watch=true")
                if c.status == 200 { opened = c; break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(opened != nil)
            opened?.close()
            a.close()
        }
    }

    @Test(arguments: StorageKind.all) func theRequesterWaitsForTheAnswer(_ storage: StorageKind) async throws {
        let clock = TestClock()
        try await withServer(storage, clock: clock) { s in
            try await seed(s)
            let id = try await issue(s)
            async let waited = s.call(.GET, "/v1/users/alice/challenges/\(id)?wait=30&view=requester", token: "reader-token")
            try await Task.sleep(for: .milliseconds(100))
            let r = try await s.call(.POST, "/v1/users/alice/challenges/\(id)/approve", token: "writer-token", body: #"{"deviceId":"phone"}"#)
            #expect(r.status == 200)
            let answer = try await waited
            #expect(answer.status == 200 && answer.json == .object([("challengeId", .string(id)), ("status", .string("approved"))]))
            // Still pending after the wait: the plain answer
            let open = try await issue(s)
            let pending = try await s.call(.GET, "/v1/users/alice/challenges/\(open)?wait=1", token: "reader-token")
            #expect(pending.status == 200 && pending["status"] == .string("pending") && pending["outcome"] == .string("pending"))
            // Expired: the wait ends at the expiry (the sweeper's event or the time itself)
            async let expiring = s.call(.GET, "/v1/users/alice/challenges/\(open)?wait=30", token: "reader-token")
            try await Task.sleep(for: .milliseconds(100))
            clock.advance(seconds: 120)
            let expired = try await expiring
            #expect(expired["status"] == .string("not_approved") && expired["outcome"] == .string("expired"))
        }
    }
}
