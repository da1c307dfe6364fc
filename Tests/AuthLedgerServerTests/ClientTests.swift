import AsyncHTTPClient
import AuthLedger
import AuthLedgerClient
import Foundation
import AuthLedgerTestSupport
import Testing

/// `AuthLedgerClient` against the real server: typed commands and queries, refusals with their
/// codes and data, the feed and durable subscriptions as sequences that resume.
@Suite(.timeLimit(.minutes(3))) struct ClientTests {
    func client(_ s: TestServer, token: String = "admin-token") -> AuthLedgerClient {
        var c = AuthLedgerClient(baseURL: s.base + "/", token: token, httpClient: TestServer.sharedClient)
        c.reconnectDelay = .milliseconds(20)
        return c
    }

    /// The raw JSON of a GET, as the server writes it.
    func raw(_ s: TestServer, _ path: String) async throws -> JSON {
        let r = try await s.call(.GET, path)
        #expect(r.status == 200)
        return try JSON.parse(r.body)
    }

    @Test(arguments: StorageKind.all) func commandsAndQueries(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            let c = client(s)
            // A user key that needs escaping in a path.
            let user = "alice/ü:1"
            let reg = try await c.perform(.register(user: user, deviceId: "iphone", name: "Alice iPhone", kind: "mobile", platform: "ios"))
            #expect(reg.events.map(\.type) == [.registered] && reg.events[0].seq == 1)

            // Typed answers are the core's values, and read back exactly what the server wrote.
            let devices = try await c.devices(of: user)
            #expect(devices.user == user && devices.devices.map(\.deviceId) == ["iphone"])
            #expect(devices.devices[0].status == .active && devices.devices[0].via == "initial")
            let rawDevices = try await raw(s, "/v1/users/alice%2F%C3%BC%3A1/devices")
            #expect(devices.json == rawDevices)

            // A refusal is typed, with its data: past the registration's cooling window a rename
            // opens another, and a second rename inside it is refused.
            s.clock.advance(seconds: 3600)
            try await c.perform(.rename(Rename(user: user, deviceId: "iphone", name: "Work iPhone")))
            do {
                try await c.perform(.rename(Rename(user: user, deviceId: "iphone", name: "Old iPhone")))
                Issue.record("a rename inside the cooling window was accepted")
            } catch let AuthLedgerClientError.refused(r) {
                #expect(r.code == .coolingPeriodActive && r.status == 423)
                #expect(r.until != nil && r.retryAfter != nil)
                #expect(r.ledgerError?.code == .coolingPeriodActive)
            }
            let cooling = try await c.cooling(of: user)
            let rawCooling = try await raw(s, "/v1/users/alice%2F%C3%BC%3A1/cooling")
            #expect(cooling.cooling.active && cooling.json == rawCooling)

            s.clock.advance(seconds: 3600)
            // A challenge from a new device, approved by the trusted one, then that device registered with it.
            let issued = try await c.perform(.issueChallenge(ChallengeRequest(user: user, requestingDeviceId: "laptop", context: StringMap([("ip", "203.0.113.7")]))))
            let challengeId = try #require(issued.challengeId)
            let pending = try await c.pending(of: user)
            #expect(pending.map(\.challengeId) == [challengeId] && pending[0].context.first?.value == "203.0.113.7")
            let before = try await c.challenge(challengeId, of: user, view: .requester)
            #expect(before.status == "pending" && before.outcome == nil)
            try await c.perform(.approve(Approval(user: user, challengeId: challengeId, deviceId: "iphone")), actor: "device:iphone")
            let after = try await c.challenge(challengeId, of: user, view: .owner)
            #expect(after.status == "approved" && after.outcome == .approved)
            try await c.perform(.register(user: user, deviceId: "laptop", name: "Alice Laptop", challengeId: challengeId))
            let both = try await c.devices(of: user)
            #expect(both.devices.map(\.deviceId) == ["iphone", "laptop"])

            // OTPs: the code comes back once; a wrong one is refused with the attempts left.
            let otp = try await c.perform(.sendOTP(OTPRequest(user: user, channel: .email, target: "alice@example.com")))
            let otpId = try #require(otp.otpId), code = try #require(otp.code)
            let wrong = code == "000000" ? "111111" : "000000"
            do {
                try await c.perform(.verifyOTP(OTPCheck(user: user, otpId: otpId, code: wrong)))
                Issue.record("a wrong code was accepted")
            } catch let AuthLedgerClientError.refused(r) {
                #expect(r.code == .otpInvalid && r.remainingAttempts != nil)
            }
            let verified = try await c.perform(.verifyOTP(OTPCheck(user: user, otpId: otpId, code: code)))
            #expect(verified.grantId != nil)

            // History pages and the export are recorded events with their chain.
            let first = try await c.history(of: user, limit: 2)
            #expect(first.events.map(\.seq) == [1, 2] && first.nextAfter == 2)
            var all = first.events
            var after2 = first.nextAfter
            while let a = after2 {
                let page = try await c.history(of: user, after: a, limit: 2)
                all += page.events
                after2 = page.nextAfter
            }
            let exported = try await c.export(user: user)
            #expect(all.map(\.seq) == exported.map(\.seq) && all.map(\.hash) == exported.map(\.hash) && exported.count >= 8)
            let head = try await c.verify()
            #expect(head.seq == exported.last?.seq)

            // Bad input and a bad token: the server's codes, nothing appended.
            do {
                try await c.perform(.rename(Rename(user: user, deviceId: "laptop", name: "x")))
                Issue.record("a one-letter name was accepted")
            } catch let AuthLedgerClientError.refused(r) {
                #expect(r.code == .invalidName && r.status == 400)
            }
            do {
                _ = try await client(s, token: "no-such-token").devices(of: user)
                Issue.record("an unknown token was accepted")
            } catch let AuthLedgerClientError.refused(r) {
                #expect(r.code == .unauthorized && r.status == 401)
            }
            do {
                try await client(s, token: "reader-token").perform(.access(Access(user: user, deviceId: "iphone")))
                Issue.record("a read token performed a command")
            } catch let AuthLedgerClientError.refused(r) {
                #expect(r.code == .forbidden)
            }
            let unchanged = try await c.verify()
            #expect(unchanged.seq == head.seq)
        }
    }

    @Test func unreachableServerIsATransportError() async throws {
        var c = AuthLedgerClient(baseURL: "http://127.0.0.1:1", token: "t", httpClient: TestServer.sharedClient)
        c.requestTimeout = .seconds(2)
        do {
            _ = try await c.devices(of: "bob")
            Issue.record("a closed port answered")
        } catch {
            guard case .transport = error else { Issue.record("not a transport error: \(error)"); return }
        }
    }

    @Test(arguments: StorageKind.all) func feedAndSubscription(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            let c = client(s)
            try await c.perform(.register(user: "bob", deviceId: "phone", name: "Bob Phone"))
            for _ in 0..<3 { try await c.perform(.access(Access(user: "bob", deviceId: "phone"))) }
            var feed = c.events(from: 1).makeAsyncIterator()
            var seqs: [UInt64] = []
            for _ in 0..<4 { seqs.append(try #require(try await feed.next()).seq) }
            #expect(seqs == [1, 2, 3, 4])
            // Live
            try await c.perform(.rename(Rename(user: "bob", deviceId: "phone", name: "Bob Pixel")))
            let live = try #require(try await feed.next())
            #expect(live.seq == 5 && live.event.type == .renamed)

            // A durable subscription: from its checkpoint, typed events, the checkpoint moved by an ack.
            let sub = try await c.subscribe("pushes", types: [.accessed])
            #expect(sub.checkpoint == 0 && sub.types == [.accessed])
            var it = c.subscriptionEvents("pushes").makeAsyncIterator()
            var got: [UInt64] = []
            for _ in 0..<3 { got.append(try #require(try await it.next()).seq) }
            #expect(got == [2, 3, 4])
            let acked = try await c.acknowledge("pushes", through: 3)
            let stored = try await c.subscription("pushes")
            #expect(acked.checkpoint == 3 && stored.checkpoint == 3)
            try await c.unsubscribe("pushes")
            do {
                _ = try await c.subscription("pushes")
                Issue.record("a deleted subscription answered")
            } catch let AuthLedgerClientError.refused(r) {
                #expect(r.code == .notFound && r.status == 404)
            }
        }
    }

    /// A position beyond the head ends the feed with the server's refusal instead of retrying forever.
    @Test func feedBeyondTheHeadIsRefused() async throws {
        try await withServer(.lmdb) { s in
            let c = client(s)
            var it = c.events(from: 50).makeAsyncIterator()
            do {
                _ = try await it.next()
                Issue.record("a feed from beyond the head was accepted")
            } catch let AuthLedgerClientError.refused(r) {
                #expect(r.code == .invalidEvent && r.status == 400)
            }
        }
    }

    /// The feed followed through a `kill -9` of the server and a restart on the same store and
    /// port: every event once, in order, none missing.
    @Test func feedSurvivesKillAndRestart() async throws {
        let store = StorageKind.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: store) }
        let port = try freePort()
        func start() throws -> ServeChild {
            try ServeChild(["serve", "--port", String(port), "--store", store, "--log-level", "info"],
                           environment: ["AUTHLEDGER_TOKENS": TestServer.tokens, "AUTHLEDGER_STORE": nil], collect: .stderr)
        }
        var server = try start()
        defer { server.killHard() }
        _ = try await server.listening()
        var c = AuthLedgerClient(baseURL: "http://127.0.0.1:\(port)", token: "admin-token", httpClient: TestServer.sharedClient)
        c.reconnectDelay = .milliseconds(50)
        c.maxReconnectDelay = .milliseconds(200)
        try await c.perform(.register(user: "carol", deviceId: "phone", name: "Carol Phone"))
        let client = c
        let reader = Task { () -> [UInt64] in
            var seqs: [UInt64] = []
            for try await e in client.events(from: 1) {
                seqs.append(e.seq)
                if seqs.count == 41 { break }
            }
            return seqs
        }
        for _ in 0..<20 { try await c.perform(.access(Access(user: "carol", deviceId: "phone"))) }
        server.killHard()
        server = try start()
        _ = try await server.listening()
        for _ in 0..<20 { try await c.perform(.access(Access(user: "carol", deviceId: "phone"))) }
        let seqs = try await reader.value
        #expect(seqs == Array(1...41))
    }

    /// `authledger serve` as a child process on `place`, on `port` (0: the kernel picks), with `options`.
    func serve(_ place: TestStore, port: Int, options: [String] = []) async throws -> (child: ServeChild, base: String) {
        let child = try ServeChild(["serve", "--port", String(port), "--log-level", "info"] + options, environment: [
            "AUTHLEDGER_TOKENS": TestServer.tokens, "AUTHLEDGER_STORE": place.store, "AUTHLEDGER_KEY_DIR": place.dir,
        ], collect: .stderr)
        do { return (child, try await child.listening(attempts: 1200)) } catch { child.stop(); throw error }
    }

    /// Watches (one key on its route, two on /v1/watch) and the feed followed through a
    /// `kill -9` and a new process on the same store and port: the changes only (no second
    /// snapshot), every event once; then the requester's wait answered by an approval.
    @Test(arguments: StorageKind.all) func watchesAndTheWaitThroughAKillAndARestart(_ storage: StorageKind) async throws {
        let place = TestStore(storage)
        defer { place.remove() }
        var (child, base) = try await serve(place, port: 0)
        defer { child.stop() }
        var c = AuthLedgerClient(baseURL: base, token: "admin-token", httpClient: TestServer.sharedClient)
        c.reconnectDelay = .milliseconds(50)
        c.maxReconnectDelay = .milliseconds(200)
        try await c.perform(.register(user: "alice", deviceId: "phone", name: "Alice Phone"))
        var keys = try c.watch([.devices(user: "alice"), .pending(user: "alice")]).makeAsyncIterator()
        var devices = c.watchDevices(of: "alice").makeAsyncIterator()
        var feed = c.events(from: 1).makeAsyncIterator()
        let first = try #require(try await keys.next()), second = try #require(try await keys.next())
        #expect(first.kind == .snapshot && second.kind == .snapshot && Set([first.answer.user, second.answer.user]) == ["alice"])
        let snapshot = try #require(try await devices.next())
        #expect(snapshot.kind == .snapshot && snapshot.position == 1 && snapshot.answer.devices.map(\.deviceId) == ["phone"])
        #expect(try await feed.next()?.seq == 1)

        child.killHard()
        (child, _) = try await serve(place, port: Int(base.split(separator: ":").last!)!)
        try await c.perform(.register(user: "alice", deviceId: "laptop", name: "Alice Laptop", via: "admin"))
        let issued = try await c.perform(.issueChallenge(ChallengeRequest(user: "alice", requestingDeviceId: "tablet")))
        var changed: [String] = []
        while changed.count < 2, let u = try await keys.next() {
            #expect(u.kind == .changed)
            switch u.answer {
            case let .devices(d): changed.append("devices"); #expect(d.devices.count == 2)
            case let .pending(_, p): changed.append("pending"); #expect(p.map(\.challengeId) == [issued.challengeId])
            default: Issue.record("an update of a key not watched")
            }
        }
        #expect(Set(changed) == ["devices", "pending"])
        let after = try #require(try await devices.next())
        #expect(after.kind == .changed && after.answer.devices.map(\.deviceId) == ["phone", "laptop"])
        #expect(try await feed.next()?.seq == 2)
        #expect(try await feed.next()?.seq == 3)

        // The requester waits; the phone approves a moment later.
        let id = try #require(issued.challengeId)
        async let answer = c.awaitAnswer(user: "alice", challenge: id, timeout: .seconds(30))
        try await Task.sleep(for: .milliseconds(200))
        try await c.perform(.approve(Approval(user: "alice", challengeId: id, deviceId: "phone")))
        let view = try await answer
        #expect(view.status == "approved" && view.outcome == nil)
    }

    func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard bound == 0 else { throw TestFailure("bind failed") }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
