import AuthLedger
import AuthLedgerClient
import AuthLedgerTestSupport
import Foundation
import Testing

/// AuthLedgerClient against a real server: calls, typed refusals, the wait, and streams
/// that reconnect by themselves across a restart of the server.
@Suite(.timeLimit(.minutes(3))) struct ClientTests {
    @Test(arguments: StorageKind.all) func aServiceFollowsTheFeedAndAWatchAcrossARestart(_ storage: StorageKind) async throws {
        var s = try await TestServer.start(storage)
        let port = s.port
        let client = AuthLedgerClient(baseURL: "http://127.0.0.1:\(port)", token: "admin-token", httpClient: s.client)
        do {
            _ = try await client.register("alice", deviceId: "phone", name: "Alice Phone")
            // A refusal is typed, with its stable code
            let refused = await #expect(throws: AuthLedgerClientError.self) { try await client.register("alice", deviceId: "phone", name: "Alice Phone") }
            #expect(refused?.code == "device_exists" && refused?.status == 409)
            let unknown = await #expect(throws: AuthLedgerClientError.self) { try await client.challenge("nope", of: "alice") }
            #expect(unknown?.code == "challenge_not_found")
            let badWait = await #expect(throws: AuthLedgerClientError.self) { try await client.awaitAnswer(user: "alice", challenge: "c", seconds: 0) }
            #expect(badWait?.field == "wait")

            var watch = client.watch(devices: ["alice"]).makeAsyncIterator()
            var feed = client.events(from: 1).makeAsyncIterator()
            let snapshot = try #require(try await watch.next())
            #expect(snapshot.kind == "snapshot" && snapshot.position == 1 && snapshot.user == "alice")
            let typed = try await client.devices("alice")
            #expect(snapshot.answer == typed.json && typed.devices.map(\.deviceId) == ["phone"] && typed.position == 1)
            #expect(try await feed.next()?.id == 1)

            // The server restarts on the same store and port; both streams carry on
            try await s.stop()
            s = try await TestServer.start(storage, at: s.place, configure: { $0.port = port })
            _ = try await client.register("alice", deviceId: "laptop", name: "Alice Laptop", fields: [("via", .string("admin"))])
            let changed = try #require(try await watch.next())
            #expect(changed.kind == "changed" && changed.position == 2)
            #expect(changed.answer["devices"]?.arrayValue?.count == 2)
            #expect(watch.events.connections == 2)
            let next = try #require(try await feed.next())
            #expect(next.id == 2 && next.event == "device.registered")
            #expect(feed.connections == 2)

            // The requester's wait
            let id = try #require(try await client.issueChallenge("alice", requestingDeviceId: "tablet")["challengeId"]?.stringValue)
            async let answer = client.awaitAnswer(user: "alice", challenge: id, seconds: 30, asRequester: true)
            try await Task.sleep(for: .milliseconds(100))
            _ = try await client.approve("alice", challenge: id, deviceId: "phone")
            let view = try await answer
            #expect(view.status == "approved" && view.outcome == nil)
            // Every typed answer reads back the document the server sent
            let pending = try await s.call(.GET, "/v1/users/alice/pending")
            #expect(try await client.pending("alice").map(\.json) == pending.json?.arrayValue)
            #expect(try await client.challenge(id, of: "alice").outcome == .approved)
            #expect(try await client.cooling("alice").cooling.active)
        } catch {
            try? await s.stop()
            s.removeStore()
            throw error
        }
        try await s.stop()
        s.removeStore()
    }

    @Test func commandsRefusalsAndDurableSubscriptions() async throws {
        try await withServer { s in
            let client = AuthLedgerClient(baseURL: "http://127.0.0.1:\(s.port)", token: "admin-token", httpClient: s.client)
            _ = try await client.register("bob", deviceId: "phone", name: "Bob Phone")
            _ = try await client.rename("bob", deviceId: "phone", name: "Bob Old Phone")
            // A second rename within the cooling window: 423 with the window's end
            let cooling = await #expect(throws: AuthLedgerClientError.self) { try await client.rename("bob", deviceId: "phone", name: "Again") }
            #expect(cooling?.code == "cooling_period_active" && cooling?.status == 423 && cooling?.until != nil)
            let otp = try await client.sendOTP("bob", channel: "email", target: "bob@example.com")
            let otpId = try #require(otp["otpId"]?.stringValue)
            let badCode = otp["code"]?.stringValue == "000000" ? "111111" : "000000"
            let wrong = await #expect(throws: AuthLedgerClientError.self) { try await client.verifyOTP("bob", otpId: otpId, code: badCode) }
            #expect(wrong?.code == "otp_invalid" && wrong?.remainingAttempts != nil)
            #expect(try await client.history("bob", limit: 2).arrayValue?.count == 2)

            // A durable subscription: events from its checkpoint, acknowledged
            _ = try await client.putSubscription("push", from: 1, user: "bob")
            var it = client.subscriptionEvents("push").makeAsyncIterator()
            let first = try #require(try await it.next())
            #expect(first.id == 1 && first.event == "device.registered")
            _ = try await client.ack("push", seq: 1)
            #expect(try await client.subscription("push")["checkpoint"] == .int(1))
            try await client.deleteSubscription("push")
            let gone = await #expect(throws: AuthLedgerClientError.self) { try await client.subscription("push") }
            #expect(gone?.status == 404)
        }
    }

    /// `authledger serve` as a child process on `place`, on `port` (0: the kernel picks).
    func serve(_ place: TestStore, port: Int) async throws -> (child: ServeChild, base: String) {
        let child = try ServeChild(["serve", "--port", String(port), "--log-level", "info"], environment: [
            "AUTHLEDGER_TOKENS": TestServer.tokens, "AUTHLEDGER_STORE": place.store, "AUTHLEDGER_KEY_DIR": place.dir,
        ], collect: .stderr)
        do { return (child, try await child.listening(attempts: 1200)) } catch { child.stop(); throw error }
    }

    @Test(arguments: StorageKind.all) func theClientFollowsThroughAKillAndARestart(_ storage: StorageKind) async throws {
        let place = TestStore(storage)
        defer { place.remove() }
        var (child, base) = try await serve(place, port: 0)
        defer { child.stop() }
        let client = AuthLedgerClient(baseURL: base, token: "admin-token", httpClient: TestServer.sharedClient)
        _ = try await client.register("alice", deviceId: "phone", name: "Alice Phone")
        var watch = client.watch(devices: ["alice"], pending: ["alice"]).makeAsyncIterator()
        var feed = client.events(from: 1).makeAsyncIterator()
        #expect(try await watch.next()?.kind == "snapshot")
        #expect(try await watch.next()?.kind == "snapshot")
        #expect(try await feed.next()?.id == 1)
        // kill -9, and a new process on the same store and port
        child.killHard()
        (child, _) = try await serve(place, port: Int(base.split(separator: ":").last!)!)
        _ = try await client.register("alice", deviceId: "laptop", name: "Alice Laptop", fields: [("via", .string("admin"))])
        _ = try await client.issueChallenge("alice", requestingDeviceId: "tablet")
        // Each stream resumed on its own: the changes only (no snapshot again), every event once
        var changes: [String] = []
        while changes.count < 2, let u = try await watch.next() {
            #expect(u.kind == "changed")
            changes.append(u.projection)
        }
        #expect(Set(changes) == ["devices", "pending"])
        #expect(watch.events.connections == 2)
        #expect(try await feed.next()?.id == 2)
        #expect(try await feed.next()?.id == 3)
        #expect(feed.connections == 2)
    }
}
