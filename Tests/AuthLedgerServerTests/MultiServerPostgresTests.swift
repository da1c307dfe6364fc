import AsyncHTTPClient
import AuthLedger
import Foundation
import NIOCore
import NIOHTTP1
import AuthLedgerTestSupport
import Testing

/// Several `authledger serve` processes on one PostgreSQL store (SPEC 8), over HTTP: the
/// built binary, two processes, one database. Runs when `AUTHLEDGER_TEST_POSTGRES` names a
/// database (tools/test starts one and requires it); no assertion depends on timing, every
/// wait is a generous bounded poll.
@Suite(.serialized, .timeLimit(.minutes(5)),
       .enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set (tools/test sets it and requires it)"))
struct MultiServerPostgresTests {
    /// One `authledger serve --port 0` on `store`, with the test tokens and shared key files;
    /// its port is read from its "listening" log line.
    struct ServeProcess: Sendable {
        let child: ServeChild
        let base: String
        var process: Process { child.process }
        var stderr: String { child.output }

        static func start(store: String, keyDir: String) async throws -> ServeProcess {
            let child = try ServeChild(["serve", "--port", "0", "--log-level", "info"], environment: [
                "AUTHLEDGER_TOKENS": TestServer.tokens,
                "AUTHLEDGER_STORE": store,   // not on the command line: it holds the password
                "AUTHLEDGER_KEY_DIR": keyDir,
                "AUTHLEDGER_ORIGIN": "multi-server.test/log",
            ], collect: .stderr)
            do {
                return ServeProcess(child: child, base: try await child.listening(attempts: 1200))
            } catch {
                child.stop()
                throw error
            }
        }

        static func redacted(_ s: String) -> String { ServeChild.redacted(s) }

        func call(_ method: HTTPMethod, _ path: String, token: String = "admin-token", body: String? = nil) async throws -> HTTPResult {
            let req = TestServer.request(base: base, method, path, token: token, body: body, headers: [])
            let resp = try await TestServer.sharedClient.execute(req, timeout: .seconds(120))
            let buffer = try await resp.body.collect(upTo: 64 << 20)
            return HTTPResult(status: Int(resp.status.code), headers: resp.headers, body: String(buffer: buffer))
        }

        func subscribe(_ path: String, lastEventID: UInt64? = nil) async throws -> SSEClient {
            var headers: [(String, String)] = [("Accept", "text/event-stream")]
            if let lastEventID { headers.append(("Last-Event-ID", "\(lastEventID)")) }
            let req = TestServer.request(base: base, .GET, path, token: "reader-token", body: nil, headers: headers)
            return SSEClient(try await TestServer.sharedClient.execute(req, timeout: .seconds(600)))
        }

        func killHard() { child.killHard() }
        func stop() { child.stop() }
    }

    /// Acknowledged appends: seq → event id, from the servers' 201 answers.
    final class Acks: @unchecked Sendable {
        private let lock = NSLock()
        private var bySeq: [UInt64: String] = [:]
        private var counts: [String: Int] = [:]
        private var failures: [String: Int] = [:]
        var all: [UInt64: String] { lock.withLock { bySeq } }
        func count(_ server: String) -> Int { lock.withLock { counts[server] ?? 0 } }
        func failed(_ server: String) { lock.withLock { failures[server, default: 0] += 1 } }
        func failures(_ server: String) -> Int { lock.withLock { failures[server] ?? 0 } }

        /// Records the events of a 201 answer; false when it is not one.
        func record(_ r: HTTPResult, server: String) -> Bool {
            guard r.status == 201, let events = r["events"]?.arrayValue, !events.isEmpty else { return false }
            lock.withLock {
                for e in events {
                    if let seq = e["seq"]?.intValue, let id = e["id"]?.stringValue { bySeq[UInt64(seq)] = id }
                }
                counts[server, default: 0] += events.count
            }
            return true
        }
    }

    /// The key directory both servers share (AUTHLEDGER_KEY_DIR: a PostgreSQL store has no directory of its own).
    static func keyDirectory() throws -> String {
        let dir = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return dir
    }

    /// Waits (bounded, generous for a loaded CI machine) for `count` events.
    static func all(_ feed: SSEClient, _ count: Int) async throws -> [SSEEvent] {
        try await feed.waitFor(count: count, attempts: 3600)
    }

    /// Two `authledger serve` processes on one fresh PostgreSQL store (shared key
    /// directory), stopped afterwards (the suite runs only with a database).
    static func withTwoServers(_ body: (ServeProcess, ServeProcess) async throws -> Void) async throws {
        _ = try #require(StorageKind.postgresURL)
        let store = StorageKind.postgres.freshStore()
        let keys = try Self.keyDirectory()
        defer { try? FileManager.default.removeItem(atPath: keys) }
        let a = try await ServeProcess.start(store: store, keyDir: keys)
        defer { a.stop() }
        let b = try await ServeProcess.start(store: store, keyDir: keys)
        defer { b.stop() }
        try await body(a, b)
    }

    @Test func everyServersFeedDeliversBothServersEventsInOrderAndResumesOnTheOther() async throws {
        try await Self.withTwoServers { a, b in

            // Given a first event, both servers' feeds from seq 1, and a durable subscription made on A
            var r = try await a.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("seed", "phone")]))
            #expect(r.status == 201, "\(r.body)")
            let feedA = try await a.subscribe("/v1/events?from=1")
            let feedB = try await b.subscribe("/v1/events?from=1")
            #expect(feedA.status == 200 && feedB.status == 200)
            r = try await a.call(.PUT, "/v1/subscriptions/mailer", token: "reader-token", body: "{}")
            #expect(r.status == 201, "\(r.body) \(ServeProcess.redacted(a.stderr))")

            // When 8 writers, 4 on each server, append 20 batches of 2 events each at once
            let acks = Acks()
            let writers = 8, batches = 20
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<writers {
                    let server = w % 2 == 0 ? a : b
                    let name = w % 2 == 0 ? "A" : "B"
                    group.addTask {
                        for i in 0..<batches {
                            let user = "user\(w)-\(i)"
                            let body = Fixture.array([Fixture.registered(user, "phone"), Fixture.accessed(user, "phone", second: i)])
                            let r = try await server.call(.POST, "/v1/events", body: body)
                            guard acks.record(r, server: name) else { throw TestFailure("append on \(name): \(r.status) \(r.body)") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let total = 1 + writers * batches * 2
            #expect(acks.count("A") == writers / 2 * batches * 2 && acks.count("B") == writers / 2 * batches * 2)
            let acknowledged = acks.all
            #expect(acknowledged.count == total - 1)

            // Then each server's feed delivers every event of both, in seq order, with no gap
            let eventsA = try await Self.all(feedA, total)
            let eventsB = try await Self.all(feedB, total)
            #expect(eventsA.compactMap(\.id) == Array(1...UInt64(total)))
            #expect(eventsB.compactMap(\.id) == Array(1...UInt64(total)))
            #expect(eventsA.map(\.data) == eventsB.map(\.data), "the two servers' feeds differ")
            for e in eventsA {
                guard let seq = e.id, let expected = acknowledged[seq] else { continue }
                #expect(e.json?["id"]?.stringValue == expected, "seq \(seq) is not the event acknowledged at it")
            }
            // And the hashes chain as one log
            for (prev, next) in zip(eventsA, eventsA.dropFirst()) {
                #expect(next.json?["prev"] == prev.json?["hash"], "seq \(next.id ?? 0) does not chain onto \(prev.id ?? 0)")
            }

            // When a client that read A's feed up to the middle resumes on B with Last-Event-ID
            let middle = UInt64(total / 2)
            let resumed = try await b.subscribe("/v1/events", lastEventID: middle)
            #expect(resumed.status == 200)
            // And one more event is appended through A
            r = try await a.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("late", "phone")]))
            #expect(r.status == 201, "\(r.body)")
            // Then B's resumed stream continues right after the middle, up to A's new event (live, from the other server)
            let rest = try await Self.all(resumed, total + 1 - Int(middle))
            #expect(rest.compactMap(\.id) == Array(middle + 1...UInt64(total + 1)))
            #expect(Array(rest.map(\.data).prefix(total - Int(middle))) == Array(eventsA.map(\.data).suffix(total - Int(middle))))
            // And the feeds opened before it get it too
            #expect(try await Self.all(feedB, total + 1).last?.json?["user"]?.stringValue == "late")
            #expect(try await Self.all(feedA, total + 1).last?.json?["user"]?.stringValue == "late")
            for f in [feedA, feedB, resumed] { f.close() }

            // When the subscription made on A is read and acknowledged on B
            let onB = try await b.subscribe("/v1/subscriptions/mailer/events")
            #expect(try await Self.all(onB, total + 1).compactMap(\.id) == Array(1...UInt64(total + 1)))
            onB.close()
            r = try await b.call(.POST, "/v1/subscriptions/mailer/ack", token: "reader-token", body: #"{"seq":\#(middle)}"#)
            #expect(r.status == 200 && r["checkpoint"] == .int(Int64(middle)), "\(r.body)")
            // Then A sees B's checkpoint and delivers from right after it
            r = try await a.call(.GET, "/v1/subscriptions/mailer", token: "reader-token")
            #expect(r["checkpoint"] == .int(Int64(middle)), "\(r.body)")
            let onA = try await a.subscribe("/v1/subscriptions/mailer/events")
            let fromCheckpoint = try await Self.all(onA, total + 1 - Int(middle))
            #expect(fromCheckpoint.first?.id == middle + 1)
            onA.close()
            // And a checkpoint moved on A is the one B reports
            r = try await a.call(.POST, "/v1/subscriptions/mailer/ack", token: "reader-token", body: #"{"seq":\#(total)}"#)
            #expect(r.status == 200)
            r = try await b.call(.GET, "/v1/subscriptions/mailer", token: "reader-token")
            #expect(r["checkpoint"] == .int(Int64(total)), "\(r.body)")
        }
    }

    @Test func bothServersListTheSameUsers() async throws {
        try await Self.withTwoServers { a, b in
            // Given users appended through both servers
            for i in 0..<12 {
                let server = i % 2 == 0 ? a : b
                let r = try await server.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("user-\(String(format: "%02d", i))", "phone")]))
                #expect(r.status == 201, "\(r.body)")
            }
            // When each lists them, page by page: the same pages (one database, one index)
            for prefix in ["", "user-0", "user-1"] {
                var after = ""
                var seen: [String] = []
                while true {
                    let path = "/v1/users?limit=5&prefix=\(prefix)&after=\(after)"
                    let ra = try await a.call(.GET, path, token: "reader-token"), rb = try await b.call(.GET, path, token: "reader-token")
                    #expect(ra.status == 200 && ra.body == rb.body, "\(path): \(ra.body) / \(rb.body)")
                    seen += ra["users"]?.arrayValue?.compactMap { $0["user"]?.stringValue } ?? []
                    guard let next = ra["next"]?.stringValue else { break }
                    after = next
                }
                #expect(seen == (0..<12).map { "user-\(String(format: "%02d", $0))" }.filter { $0.hasPrefix(prefix) }, "\(prefix)")
            }
            // A user appended on B is listed by A at once
            #expect(try await b.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("user-99", "phone")])).status == 201)
            let r = try await a.call(.GET, "/v1/users?prefix=user-9", token: "reader-token")
            #expect(r["users"]?.arrayValue?.map { $0["user"]?.stringValue } == ["user-99"])
        }
    }

    @Test func killingOneServerUnderLoadLosesNoAcknowledgedEventAndTheOtherGoesOn() async throws {
        try await Self.withTwoServers { a, b in

            // Given writers appending through both servers: A's until A is gone, B's a fixed number each
            let acks = Acks()
            let perWriterOnB = 40
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<8 {
                    let onA = w % 2 == 0
                    group.addTask {
                        for i in 0..<(onA ? 100_000 : perWriterOnB) {
                            let body = Fixture.array([Fixture.registered("user\(w)-\(i)", "phone")])
                            if onA {
                                if Task.isCancelled { return }
                                // A failure to get an answer (refused, reset, cut mid-answer) is an append not
                                // acknowledged; an answer is a 201
                                guard let r = try? await a.call(.POST, "/v1/events", body: body) else {
                                    acks.failed("A")
                                    return
                                }
                                guard acks.record(r, server: "A") else { throw TestFailure("append on A: \(r.status) \(r.body)") }
                            } else {
                                let r = try await b.call(.POST, "/v1/events", body: body)
                                guard acks.record(r, server: "B") else { throw TestFailure("append on B: \(r.status) \(r.body)") }
                            }
                        }
                        if onA { throw TestFailure("A was never killed") }
                    }
                }
                // When A is killed (-9) while its writers are mid-flight, once it acknowledged some
                group.addTask {
                    var polls = 0
                    while acks.count("A") < 60, polls < 6000 {
                        try await Task.sleep(for: .milliseconds(20))
                        polls += 1
                    }
                    #expect(acks.count("A") >= 60, "A acknowledged too few appends to kill it under load")
                    a.killHard()
                }
                try await group.waitForAll()
            }
            #expect(!a.process.isRunning)
            #expect(acks.failures("A") == 4, "every writer on A stops at its first failure")
            #expect(acks.count("B") == 4 * perWriterOnB)

            // Then B goes on: it appends after A's death
            var r = try await b.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("after", "phone")]))
            #expect(r.status == 201, "\(r.body)")
            guard r.status == 201, let head = r["head"]?["seq"]?.intValue else { return }
            #expect(acks.record(r, server: "B"))

            // And B's feed holds every event acknowledged by either server at its seq, gap-free
            let feed = try await b.subscribe("/v1/events?from=1")
            let log = try await Self.all(feed, Int(head))
            feed.close()
            #expect(log.compactMap(\.id) == Array(1...UInt64(head)))
            var idAt: [UInt64: String] = [:]
            for e in log { if let seq = e.id { idAt[seq] = e.json?["id"]?.stringValue ?? "" } }
            let acknowledged = acks.all
            var lost: [UInt64] = []
            for (seq, id) in acknowledged where idAt[seq] != id { lost.append(seq) }
            #expect(lost.isEmpty, "acknowledged events missing from the log at seqs \(lost.sorted().prefix(20))")
            #expect(acknowledged.count == acks.count("A") + acks.count("B"))
            // And the log is whole: every hash, index and projection checks out
            r = try await b.call(.GET, "/v1/verify", token: "auditor-token")
            #expect(r.status == 200 && r["ok"] == .bool(true), "\(r.body)")
            #expect(r["head"]?["seq"]?.intValue == head, "\(r.body)")
        }
    }
}
