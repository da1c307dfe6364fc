import AsyncHTTPClient
import AuthLedger
import AuthLedgerLMDB
@testable import AuthLedgerServer
import AuthLedgerTestSupport
import Foundation
import Synchronization
import NIOCore
import Testing

/// Probes, drain, logs and metrics of `serve` (SPEC 15, "Probes and shutdown", "Logs",
/// "Metrics"), run as an operator runs them: the built binary as a child process, or the
/// server in process for the metrics.
@Suite(.serialized, .timeLimit(.minutes(3))) struct OperationsTests {
    static let token = "ops-secret-token-4f1c"

    static func get(_ url: String, token: String? = nil) async throws -> HTTPResult {
        var req = HTTPClientRequest(url: url)
        if let token { req.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let resp = try await TestServer.sharedClient.execute(req, timeout: .seconds(30))
        let body = try await resp.body.collect(upTo: 16 << 20)
        return HTTPResult(status: Int(resp.status.code), headers: resp.headers, body: String(buffer: body))
    }

    static func post(_ url: String, _ body: String, token: String = OperationsTests.token) async throws -> HTTPResult {
        let req = TestServer.request(base: url, .POST, "", token: token, body: body, headers: [])
        let resp = try await TestServer.sharedClient.execute(req, timeout: .seconds(30))
        let buffer = try await resp.body.collect(upTo: 16 << 20)
        return HTTPResult(status: Int(resp.status.code), headers: resp.headers, body: String(buffer: buffer))
    }

    /// Polls `url` until it answers `status` (bounded: `attempts` × 100 ms); the statuses seen.
    static func waitFor(_ url: String, status: Int, attempts: Int = 200, each: (() async throws -> Void)? = nil) async throws -> [Int] {
        var seen: [Int] = []
        for _ in 0..<attempts {
            let s = try await get(url).status
            seen.append(s)
            try await each?()
            if s == status { return seen }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("\(url) never answered \(status): \(seen.suffix(5))")
    }

    /// Runs a script of the checkout (`tools/postgres …`) to its end; its stdout. Throws on a non-zero exit.
    static func tool(_ args: [String]) async throws -> String {
        let out = TemporaryDirectory.make("ops-tool") + "/out"
        let command = "cd '\(ServeChild.root.path)' && " + args.map { "'\($0)'" }.joined(separator: " ") + " > '\(out)'"
        // system(3) waits on this thread with waitpid: Foundation's Process may never see a
        // script's exit from the cooperative pool.
        let status = system(command)
        guard status == 0 else { throw TestFailure("\(args.joined(separator: " ")) exited \(status)") }
        return try String(contentsOfFile: out, encoding: .utf8)
    }

    /// `tools/postgres stop DIR` (for a `defer`).
    static func stopPostgres(_ dir: String) { _ = system("cd '\(ServeChild.root.path)' && tools/postgres stop '\(dir)'") }

    /// Waits (bounded) until the child's collected output holds `text` (after it exited, the rest of the pipe).
    static func waitForOutput(_ server: ServeChild, _ text: String) async throws {
        for _ in 0..<100 where !server.output.contains(text) { try await Task.sleep(for: .milliseconds(50)) }
    }

    /// Waits (bounded) for the child to exit; its status.
    static func exitStatus(_ server: ServeChild, attempts: Int = 300) async throws -> Int32 {
        for _ in 0..<attempts where server.process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        guard !server.process.isRunning else { throw TestFailure("serve did not exit") }
        return server.process.terminationStatus
    }

    @Test func sigtermAnswers503OnReadyzForTheDrainThenStopsAcceptingEndsStreamsAndExitsZero() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A drain of 10 s: the requests below must all be served inside it, on a loaded
        // machine too (with 4 s, it once ended before them while this suite's 100,000
        // readiness probes ran beside it).
        let server = try ServeChild(["serve", "--port", "0", "--store", dir + "/store", "--log-level", "info", "--drain-seconds", "10"],
                                    environment: ["AUTHLEDGER_TOKENS": "\(Self.token):admin", "AUTHLEDGER_STORE": nil], collect: .stderr)
        defer { server.stop() }
        let url = try await server.listening()
        #expect(try await Self.get(url + "/readyz").status == 200)
        #expect(try await Self.get(url + "/livez").status == 200)
        // An event stream open before the signal
        var req = HTTPClientRequest(url: url + "/v1/events?from=1")
        req.headers.add(name: "Authorization", value: "Bearer \(Self.token)")
        let stream = SSEClient(try await TestServer.sharedClient.execute(req, timeout: .seconds(120)))
        #expect(stream.status == 200)

        // When it gets SIGTERM
        kill(server.process.processIdentifier, SIGTERM)
        // Then /readyz answers 503 draining, while /livez and the API are still served
        let seen = try await Self.waitFor(url + "/readyz", status: 503)
        #expect(Set(seen).isSubset(of: [200, 503]))
        let draining = try await Self.get(url + "/readyz")
        #expect(draining.status == 503 && draining["status"] == .string("draining"))
        #expect(try await Self.get(url + "/livez").status == 200)
        let registered = try await Self.post(url + "/v1/users/alice/devices", #"{"deviceId":"phone","name":"Phone","kind":"mobile"}"#)
        #expect(registered.status == 201, "\(registered.body)")
        #expect(try await Self.get(url + "/v1/users/alice/devices", token: Self.token).status == 200)
        // And after the drain it stops: the stream ends, the process exits 0, nothing listens
        #expect(try await Self.exitStatus(server) == 0)
        try await stream.waitUntil { $0.isFinished }
        #expect(server.output.contains("draining"))
        await #expect(throws: (any Error).self) { _ = try await Self.get(url + "/livez") }
    }

    /// A store that answers at once is ready at every probe: the probe's timer, cancelled
    /// when the read answers, must never answer "unavailable" in between (it did, about once
    /// in a few thousand probes, until the HTTP fuzz target caught a 503 from /readyz).
    @Test func aProbeWhoseReadAnswersIsNeverReportedUnavailable() async {
        var unavailable = 0
        for _ in 0..<100_000 where await !Readiness.first(Task { true }, orFalseAfter: .seconds(60)) {
            unavailable += 1
        }
        #expect(unavailable == 0)
    }

    /// And a read that does not answer within the limit makes the probe answer "unavailable".
    @Test func aProbeWhoseReadHangsIsUnavailableAfterTheLimit() async {
        let hanging = Task<Bool, Never> {
            try? await Task.sleep(for: .seconds(30))
            return true
        }
        let started = ContinuousClock.now
        #expect(await Readiness.first(hanging, orFalseAfter: .milliseconds(100)) == false)
        #expect(ContinuousClock.now - started < .seconds(20))
        hanging.cancel()
    }

    @Test func heartbeatIntervalSetsTheKeepAliveOfIdleStreams() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Given a server whose idle streams send their keep-alive every 0.5 s (default 15 s)
        let server = try ServeChild(["serve", "--port", "0", "--store", dir + "/store", "--log-level", "info", "--heartbeat-interval", "0.5"],
                                    environment: ["AUTHLEDGER_TOKENS": "\(Self.token):admin", "AUTHLEDGER_STORE": nil], collect: .stderr)
        defer { server.stop() }
        let url = try await server.listening()
        // When a watch stays idle
        var req = HTTPClientRequest(url: url + "/v1/users/alice/devices?watch=true")
        req.headers.add(name: "Authorization", value: "Bearer \(Self.token)")
        let stream = SSEClient(try await TestServer.sharedClient.execute(req, timeout: .seconds(120)))
        defer { stream.close() }
        #expect(stream.status == 200)
        // Then its snapshot is followed by progress events, three within the wait's bound
        // (20 s: at the default interval they would take 45 s)
        let events = try await stream.waitFor(count: 4)
        #expect(events.first?.event == "snapshot")
        #expect(events.dropFirst().allSatisfy { $0.event == "progress" }, "\(events.map { $0.event ?? "" })")
    }

    @Test func ssfPollWaitBoundsAnEmptyLongPoll() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Given a server whose polls wait at most 0.5 s for a SET (default 15 s)
        let server = try ServeChild(["serve", "--port", "0", "--store", dir + "/store", "--log-level", "info", "--ssf-poll-wait", "0.5"],
                                    environment: ["AUTHLEDGER_TOKENS": "\(Self.token):admin", "AUTHLEDGER_STORE": nil], collect: .stderr)
        defer { server.stop() }
        let url = try await server.listening()
        let created = try await Self.post(url + "/ssf/streams", "{}")
        let id = try #require(created["stream_id"]?.stringValue, "\(created.body)")
        // When a poll without returnImmediately finds nothing to deliver
        let req = TestServer.request(base: url, .POST, "/ssf/poll/\(id)", token: Self.token, body: "{}", headers: [])
        // Then it is answered, empty, within a client timeout (5 s) the default wait would outlast
        let resp = try await TestServer.sharedClient.execute(req, timeout: .seconds(5))
        let body = String(buffer: try await resp.body.collect(upTo: 1 << 20))
        #expect(resp.status.code == 200)
        #expect((try? JSON.parse(body))?["sets"] == .object([]), "\(body)")
    }

    @Test(arguments: [["--heartbeat-interval", "0"], ["--heartbeat-interval", "0.05"], ["--heartbeat-interval", "3601"],
                      ["--heartbeat-interval", "x"], ["--ssf-poll-wait", "0"], ["--ssf-poll-wait", "301"]])
    func keepAliveAndPollWaitOutOfRangeAreRefused(_ option: [String]) async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServeChild(["serve", "--port", "0", "--store", dir + "/store"] + option,
                                    environment: ["AUTHLEDGER_TOKENS": "\(Self.token):admin", "AUTHLEDGER_STORE": nil], collect: .stderr)
        defer { server.stop() }
        #expect(try await Self.exitStatus(server) != 0)
        #expect(server.output.contains(option[0]), "\(server.output)")
    }

    @Test(.enabled(if: StorageKind.postgresURL != nil, "needs PostgreSQL (tools/test installs it)"))
    func readyzFailsWhilePostgreSQLIsDownAndRecoversWhileLivezStaysUp() async throws {
        // A PostgreSQL of its own (tools/postgres), stopped and started under the server
        let started = try await Self.tool(["tools/postgres", "start"])
        let lines = started.split(separator: "\n").map(String.init)
        let (pgDir, pgURL) = (lines[0], lines[1])
        defer { Self.stopPostgres(pgDir) }
        let keys = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: keys) }
        let server = try ServeChild(["serve", "--port", "0", "--store", pgURL, "--log-level", "info"],
                                    environment: ["AUTHLEDGER_TOKENS": "\(Self.token):admin", "AUTHLEDGER_STORE": nil, "AUTHLEDGER_KEY_DIR": keys],
                                    collect: .stderr)
        defer { server.stop() }
        let url = try await server.listening()
        #expect(try await Self.get(url + "/readyz").status == 200)

        // When PostgreSQL stops: /readyz 503 unavailable, /livez 200 at every poll
        _ = try await Self.tool(["tools/postgres", "pause", pgDir])
        var live: [Int] = []
        _ = try await Self.waitFor(url + "/readyz", status: 503) { live.append(try await Self.get(url + "/livez").status) }
        let down = try await Self.get(url + "/readyz")
        #expect(down.status == 503 && down["status"] == .string("unavailable"), "\(down.body)")
        // And when it is back: /readyz 200 again, /livez 200 throughout, the server never restarted
        _ = try await Self.tool(["tools/postgres", "resume", pgDir])
        _ = try await Self.waitFor(url + "/readyz", status: 200, attempts: 600) { live.append(try await Self.get(url + "/livez").status) }
        #expect(!live.isEmpty && live.allSatisfy { $0 == 200 }, "\(live)")
        #expect(server.process.isRunning)
        let registered = try await Self.post(url + "/v1/users/bob/devices", #"{"deviceId":"phone","name":"Phone","kind":"mobile"}"#)
        #expect(registered.status == 201, "\(registered.body)")
    }

    @Test func jsonLogsAndTheAccessLogNameRequestsButNeverTheTokenOrAPersonalValue() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let accessLog = dir + "/access.log"
        let server = try ServeChild(["serve", "--port", "0", "--store", dir + "/store", "--log-format", "json", "--access-log", accessLog],
                                    environment: ["AUTHLEDGER_TOKENS": "ops=\(Self.token):admin", "AUTHLEDGER_STORE": nil], collect: .stderr)
        defer { server.stop() }
        let url = try await server.waitFor("listening line") { text -> String? in
            guard let l = text.split(separator: "\n").first(where: { $0.contains("\"listening\"") }),
                  let port = (try? JSON.parse(String(l)))?["port"]?.stringValue else { return nil }
            return "http://127.0.0.1:\(port)"
        }
        let secretName = "Alice Private Phone 7731"
        #expect(try await Self.post(url + "/v1/users/alice/devices", #"{"deviceId":"phone","name":"\#(secretName)","kind":"mobile"}"#).status == 201)
        #expect(try await Self.get(url + "/v1/users/alice/devices", token: Self.token).status == 200)
        #expect(try await Self.get(url + "/v1/users/alice/history", token: Self.token).status == 200)
        #expect(try await Self.get(url + "/v1/export?user=alice", token: Self.token).status == 200)
        #expect(try await Self.get(url + "/v1/users/alice/devices", token: "wrong-token").status == 401)
        #expect(try await Self.get(url + "/livez").status == 200)
        server.stop()
        try await Self.waitForOutput(server, "\"stopped\"")

        // Every stderr line is one JSON object with time, level and message
        let logLines = server.output.split(separator: "\n").map(String.init)
        let objects = try logLines.map { try JSON.parse($0) }
        for o in objects {
            #expect(o["time"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) != nil && o["level"]?.stringValue != nil && o["message"]?.stringValue != nil)
        }
        // A request line per request, with its fields
        let requests = objects.filter { $0["message"] == .string("request") }
        let devices = try #require(requests.first { $0["route"] == .string("/v1/users/{user}/devices") && $0["method"] == .string("GET") && $0["status"] == .int(200) })
        #expect(devices["caller"] == .string("token:ops") && devices["level"] == .string("info"))
        #expect(devices["durationMs"].map { if case .number = $0 { true } else { $0.intValue != nil } } == true)
        #expect(devices["requestId"]?.stringValue?.isEmpty == false)
        #expect(requests.contains { $0["route"] == .string("/v1/users/{user}/devices") && $0["status"] == .int(401) })
        #expect(requests.contains { $0["route"] == .string("/livez") && $0["status"] == .int(200) })

        // The access log: the reads of alice's data (the refused one too), not the command nor /livez
        let access = try String(contentsOfFile: accessLog, encoding: .utf8).split(separator: "\n").map { try JSON.parse(String($0)) }
        #expect(access.map { $0["route"]?.stringValue ?? "" } == ["/v1/users/{user}/devices", "/v1/users/{user}/history", "/v1/export", "/v1/users/{user}/devices"])
        #expect(access.allSatisfy { $0["user"] == .string("alice") && $0["time"]?.stringValue != nil })
        #expect(access.map { $0["status"]?.intValue ?? 0 } == [200, 200, 200, 401])
        #expect(access.map { $0["caller"] ?? .null } == [.string("token:ops"), .string("token:ops"), .string("token:ops"), .null])
        // Neither holds the token nor the device's name (a personal value)
        let accessText = try String(contentsOfFile: accessLog, encoding: .utf8)
        for text in [server.output, accessText] {
            #expect(!text.contains(Self.token) && !text.contains("wrong-token"))
            #expect(!text.contains(secretName))
        }
    }

    @Test func metricsTellTheHeadTheStoreTheWatchersThePushLagAndTheBuild() async throws {
        let s = try await TestServer.start()
        defer { Task { try? await s.stop() } }
        let imported = try await s.call(.POST, "/v1/events", token: "importer-token",
                                        body: Fixture.array([Fixture.registered("u1", "d1"), Fixture.registered("u2", "d1")]))
        #expect(imported.status == 201, "\(imported.body)")
        let first = try await s.call(.GET, "/metrics", token: "reader-token").body
        #expect(first.contains("authledger_head_seq 2"), "\(first.split(separator: "\n").filter { $0.hasPrefix("authledger_") })")
        #expect(try await s.metric("authledger_head_seq") == 2)
        #expect(try await s.metric("authledger_store_file_bytes") ?? 0 > 0)
        let used = try #require(try await s.metric("authledger_store_used_bytes"))
        let map = try #require(try await s.metric("authledger_store_map_bytes"))
        #expect(used > 0 && map >= used)
        #expect(try await s.metric("authledger_watchers") == 0)
        let text = try await s.call(.GET, "/metrics", token: "reader-token").body
        #expect(text.contains("authledger_build_info{version=\"\(AuthLedgerVersion.current)\"} 1"))

        // An open event stream is a watcher
        let stream = try await s.subscribe("/v1/events?from=1")
        #expect(try await s.waitForMetric("authledger_watchers", atLeast: 1) >= 1)
        stream.close()

        // A push stream whose receiver is down lags by the events it has not delivered
        let r = try await s.call(.POST, "/ssf/streams", body: #"""
        {"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"http://127.0.0.1:9/receiver"},"description":"lagging"}
        """#)
        let id = try #require(r["stream_id"]?.stringValue, "\(r.body)")
        // (it starts at the head: two events appended after it are not delivered)
        let more = try await s.call(.POST, "/v1/events", token: "importer-token",
                                    body: Fixture.array([Fixture.registered("u3", "d1"), Fixture.registered("u4", "d1")]))
        #expect(more.status == 201)
        let lag = try await s.call(.GET, "/metrics", token: "reader-token").body.split(separator: "\n")
            .first { $0.hasPrefix("authledger_ssf_push_lag_events{stream=\"\(id)\"}") }
        #expect(lag.map { Double($0.split(separator: " ").last!) ?? -1 } == 2, "\(String(describing: lag))")
    }

    @Test func theWitnessedSizeIsTheLargestCheckpointCarryingAWitnessCosignature() async throws {
        let ledger = try await TestStore().open()
        let signer = try CheckpointSigner(origin: "ops.example/log", seed: Array(repeating: 7, count: 32))
        let root = Hash32(bytes: Array(repeating: 1, count: 32))
        let cosignature = "\u{2014} witness.example " + Data([0, 0, 0, 1] + Array(repeating: 9, count: 72)).base64EncodedString() + "\n"
        // Nothing stored, then a latest checkpoint signed by the log alone: nothing cosigned
        #expect(try await WitnessedSize.of(ledger) == nil)
        try await ledger.updateMetaRecords { _, put in try put("witness/latest", Array(try signer.sign(size: 9, root: root).utf8)) }
        #expect(try await WitnessedSize.of(ledger) == nil)
        // A quorum checkpoint of size 5 with a cosignature, and the latest (size 9) cosigned too
        try await ledger.updateMetaRecords { _, put in
            try put("witness/quorum", Array((try signer.sign(size: 5, root: root) + cosignature).utf8))
        }
        #expect(try await WitnessedSize.of(ledger) == 5)
        try await ledger.updateMetaRecords { _, put in
            try put("witness/latest", Array((try signer.sign(size: 9, root: root) + cosignature).utf8))
        }
        #expect(try await WitnessedSize.of(ledger) == 9)
        await ledger.close()
    }

    /// Runs `authledger ARGUMENTS` of this build to its end (bounded); its status and stdout.
    static func cli(_ arguments: [String]) async throws -> (status: Int32, stdout: String) {
        let child = try ServeChild(arguments, environment: ["AUTHLEDGER_STORE": nil], collect: .stdout)
        let status = try await exitStatus(child, attempts: 1200)
        try await Task.sleep(for: .milliseconds(100))  // the rest of the pipe
        return (status, child.output)
    }

    /// What 64 writers had acknowledged (seq of each answer), how far each got, when to stop.
    final class Writers: Sendable {
        let acked = Mutex<Set<UInt64>>([])
        let counts = Mutex<[Int]>(Array(repeating: 0, count: 64))
        let stop = Atomic<Bool>(false)
    }

    @Test func aBackupFromAnotherProcessWhile64ClientsAppendThroughServeHoldsEveryAcknowledgedEvent() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = dir + "/store"
        let server = try ServeChild(["serve", "--port", "0", "--store", store, "--log-level", "info"],
                                    environment: ["AUTHLEDGER_TOKENS": "\(Self.token):admin", "AUTHLEDGER_STORE": nil], collect: .stderr)
        defer { server.stop() }
        let url = try await server.listening()
        // 64 clients, each its own user: a registration, then accesses one after another
        let writers = Writers()
        let backup = dir + "/backup"
        let taken = try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<64 {
                group.addTask {
                    let base = url + "/v1/users/writer-\(w)/devices"
                    var r = try await Self.post(base, #"{"deviceId":"d1","name":"Phone","kind":"mobile"}"#)
                    var k = 0
                    while r.status == 201 || r.status == 200 {
                        let seqs = (r["events"]?.arrayValue ?? []).compactMap { $0["seq"]?.intValue }.map(UInt64.init)
                        writers.acked.withLock { $0.formUnion(seqs) }
                        k += 1
                        writers.counts.withLock { $0[w] = k }
                        if writers.stop.load(ordering: .relaxed) && k >= 6 { return }
                        r = try await Self.post(base + "/d1/access", "{}")
                    }
                    throw TestFailure("writer \(w): \(r.status) \(r.body)")
                }
            }
            for _ in 0..<3000 where writers.counts.withLock({ $0.min()! }) < 3 { try await Task.sleep(for: .milliseconds(20)) }
            guard writers.counts.withLock({ $0.min()! }) >= 3 else { throw TestFailure("the writers did not get going") }
            // When `authledger backup` runs in its own process while they go on
            let before = writers.acked.withLock { $0 }
            let run = try await Self.cli(["backup", backup, "--store", store, "--json"])
            writers.stop.store(true, ordering: .relaxed)
            try await group.waitForAll()
            return (run, before)
        }
        let (run, ackedBefore) = taken
        #expect(run.status == 0, "\(run.stdout)")
        let head = try #require(JSON.parse(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["head"]?["seq"]?.intValue)
        // Then every event acknowledged before it began is at or below its head
        #expect(UInt64(head) >= ackedBefore.max() ?? 0 && ackedBefore.count >= 64 * 3)
        server.stop()

        // And the restore holds the live store's events up to that head, byte for byte, and verifies
        let restored = dir + "/restored"
        let restore = try await Self.cli(["restore", backup, "--store", restored])
        #expect(restore.status == 0, "\(restore.stdout)")
        let live = try await Ledger(lmdb: store), copy = try await Ledger(lmdb: restored)
        #expect(try await copy.verify().seq == UInt64(head))
        let expected = try await live.events(from: 1, limit: Int(head)).map(\.hash)
        #expect(try await copy.events(from: 1).map(\.hash) == expected)
        await live.close()
        await copy.close()
    }
}
