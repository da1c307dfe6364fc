import AsyncHTTPClient
import AuthLedger
@testable import AuthLedgerServer
@testable import AuthLedgerFuzzChecks
import AuthLedgerTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// Hardening of the service: hostile headers and numbers, a full disk, subscription
/// ownership, scopes, a bad request in a busy batch, and limits that do not get in a
/// service's way.
@Suite(.timeLimit(.minutes(3))) struct HardeningServerTests {
    @Test func aLastEventIDAtTheTopOfTheRangeIs400NotATrap() async throws {
        try await withServer { s in
            try await s.call(.POST, "/v1/events", token: "admin-token", body: Fixture.array([Fixture.registered("alice", "phone")]))
            try await s.call(.PUT, "/v1/subscriptions/mailer", token: "reader-token", body: "{}")
            for value in ["18446744073709551615", "18446744073709551614", "9223372036854775807", "2", "18446744073709551616", "-1", "1e3", "+1"] {
                for path in ["/v1/events", "/v1/subscriptions/mailer/events"] {
                    let r = try await s.call(.GET, path, token: "reader-token", headers: [("Last-Event-ID", value)])
                    #expect(r.status == 400, "\(path) Last-Event-ID \(value): \(r.status)")
                    #expect(r.error == "invalid_event")
                    #expect(r["field"]?.stringValue == "Last-Event-ID")
                }
            }
            // The server is still up and answers
            #expect(try await s.call(.GET, "/health", token: nil).status == 200)
        }
    }

    @Test func everyNumberAndTimeInAQueryIsRangeChecked() async throws {
        try await withServer { s in
            try await s.call(.POST, "/v1/events", token: "admin-token", body: Fixture.array([Fixture.registered("alice", "phone")]))
            let bad = [
                "/v1/users/alice/devices?at=18446744073709551616", "/v1/users/alice/devices?at=-1",
                "/v1/users/alice/devices?asOf=0001-01-01T00:00:00Z", "/v1/users/alice/devices?asOf=1969-12-31T23:59:59Z",
                "/v1/users/alice/devices?asOf=10000-01-01T00:00:00Z", "/v1/events?from=18446744073709551615",
                "/v1/events?from=99", "/v1/export?from=-5", "/v1/users/alice/devices?at=+1", "/v1/export?from=%201",
                "/v1/export?from=18446744073709551616",
            ]
            for path in bad {
                let r = try await s.call(.GET, path, token: "admin-token")
                #expect(r.status == 400, "\(path): \(r.status) \(r.body)")
            }
            for path in ["/v1/users/alice/devices?at=18446744073709551615", "/v1/users/alice/devices?asOf=9999-12-31T23:59:59.999Z"] {
                #expect(try await s.call(.GET, path, token: "admin-token").status == 200, "\(path)")
            }
            // An integer written with a zero fraction is that integer (as JSON Schema counts it)
            #expect(try await s.call(.PUT, "/v1/policy", token: "admin-token", body: #"{"otpPerHour":5.0}"#).status == 200)
            #expect(try await s.call(.PUT, "/v1/policy", token: "admin-token", body: #"{"otpPerHour":5.5}"#).status == 400)
            // A subscription may not start beyond the head + 1
            let r = try await s.call(.PUT, "/v1/subscriptions/far", token: "reader-token", body: #"{"from":9223372036854775807}"#)
            #expect(r.status == 400, "\(r.body)")
            #expect(try await s.call(.GET, "/health", token: nil).status == 200)
        }
    }

    @Test func aFullDiskIs507ForThatRequestAndAppendsWorkAgainOnceSpaceIsFreed() async throws {
        let (mounted, reason) = SmallFilesystem.mount(megabytes: 4)
        guard let fs = mounted else {
            print("SKIPPED aFullDiskIs507ForThatRequestAndAppendsWorkAgainOnceSpaceIsFreed: \(reason)")
            return
        }
        defer { fs.unmount() }
        // Given the real server over a store on a 4 MB filesystem, with alice registered
        // (LMDB only: a full filesystem under the store; PostgreSQL's disk is the database server's)
        let s = try await TestServer.start(at: TestStore(lmdbDirectory: fs.path + "/store"))
        do {
            var r = try await s.call(.POST, "/v1/events", token: "admin-token", body: Fixture.array([Fixture.registered("alice", "phone")]))
            #expect(r.status == 201)
            // When the disk is full
            fs.fill()
            // Then appends that need space are refused with 507 storage_full, one after the other
            let bulky = Fixture.array((1...40).map { Fixture.accessed("alice", "phone", second: $0, padding: 8000) })
            for _ in 0..<3 {
                r = try await s.call(.POST, "/v1/events", token: "admin-token", body: bulky)
                #expect(r.status == 507, "\(r.status) \(r.body)")
                #expect(r.error == "storage_full")
            }
            // And reads keep being served; nothing of the refused requests was appended
            r = try await s.call(.GET, "/v1/users/alice/history", token: "reader-token")
            #expect(r.status == 200)
            #expect(r.json?.arrayValue?.count == 1)
            #expect(try await s.call(.GET, "/health", token: nil).status == 200)
            // When space is freed, appends work again, and the log verifies
            fs.free()
            r = try await s.call(.POST, "/v1/events", token: "admin-token", body: bulky)
            #expect(r.status == 201, "\(r.status) \(r.body)")
            r = try await s.call(.GET, "/v1/verify", token: "auditor-token")
            #expect(r.status == 200 && r["ok"] == .bool(true), "\(r.body)")
        } catch {
            try? await s.stop()
            throw error
        }
        try await s.stop()
    }

    @Test(arguments: StorageKind.all) func aDurableSubscriptionBelongsToTheTokenThatCreatedIt(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await s.call(.POST, "/v1/events", token: "admin-token", body: Fixture.array([Fixture.registered("alice", "phone")]))
            var r = try await s.call(.PUT, "/v1/subscriptions/mailer", token: "reader-token", body: "{}")
            #expect(r.status == 201)
            // Another read token can neither see, replace, ack, stream nor delete it: 404
            for (method, path, body) in [(HTTPMethod.GET, "/v1/subscriptions/mailer", nil as String?),
                                         (.PUT, "/v1/subscriptions/mailer", #"{"from":1}"#),
                                         (.POST, "/v1/subscriptions/mailer/ack", #"{"seq":1}"#),
                                         (.GET, "/v1/subscriptions/mailer/events", nil),
                                         (.DELETE, "/v1/subscriptions/mailer", nil)] {
                r = try await s.call(method, path, token: "reader2-token", body: body)
                #expect(r.status == 404, "\(method) \(path) by another token: \(r.status)")
            }
            // Its owner still has it, untouched
            r = try await s.call(.GET, "/v1/subscriptions/mailer", token: "reader-token")
            #expect(r.status == 200 && r["checkpoint"] == .int(0))
            // admin sees and acks it
            r = try await s.call(.POST, "/v1/subscriptions/mailer/ack", token: "admin-token", body: #"{"seq":1}"#)
            #expect(r.status == 200 && r["checkpoint"] == .int(1))
            // The owner deletes it
            #expect(try await s.call(.DELETE, "/v1/subscriptions/mailer", token: "reader-token").status == 204)
            // No token digest or token is stored in clear
            let stored = try await s.call(.GET, "/v1/export", token: "auditor-token").body
            #expect(!stored.contains("reader-token"))
        }
    }

    @Test(arguments: StorageKind.all) func rawEventsNeedTheImportScopeAndAdminRegistrationTheAdminScope(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            let forged = Fixture.array([Fixture.registered("alice", "phone")])
            var r = try await s.call(.POST, "/v1/events", token: "writer-token", body: forged)
            #expect(r.status == 403 && r.error == "forbidden")
            r = try await s.call(.POST, "/v1/events", token: "importer-token", body: forged)
            #expect(r.status == 201)
            // importer cannot run commands or read
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: "importer-token").status == 403)
            // via admin: admin only
            let admin = #"{"deviceId":"laptop","name":"Alice laptop","kind":"desktop","via":"admin"}"#
            r = try await s.call(.POST, "/v1/users/alice/devices", token: "writer-token", body: admin)
            #expect(r.status == 403 && r.error == "forbidden", "\(r.body)")
            r = try await s.call(.POST, "/v1/users/alice/devices", token: "admin-token", body: admin)
            #expect(r.status == 201, "\(r.body)")
        }
    }

    @Test(arguments: StorageKind.all) func aBadExpectedVersionInABusyBatchFailsOnlyItself(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await s.call(.POST, "/v1/events", token: "admin-token", body: Fixture.array((0..<40).map { Fixture.registered("user\($0)", "phone") }))
            let statuses = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for k in 0..<40 {
                    group.addTask {
                        let body = k % 10 == 5
                            ? #"{"events":[\#(Fixture.accessed("user\(k)", "phone", second: 100))],"expectedVersion":{"":0}}"#
                            : Fixture.array([Fixture.accessed("user\(k)", "phone", second: 100)])
                        return (k, try await s.call(.POST, "/v1/events", token: "importer-token", body: body).status)
                    }
                }
                var out: [Int: Int] = [:]
                for try await (k, st) in group { out[k] = st }
                return out
            }
            for (k, st) in statuses {
                #expect(st == (k % 10 == 5 ? 400 : 201), "request \(k): \(st)")
            }
            #expect(try await s.call(.GET, "/v1/verify", token: "auditor-token")["head"]?["seq"] == .int(76))
        }
    }

    @Test func theDefaultLimitsLetOneServiceTokenRunFlatOut() async throws {
        // With the default configuration (the tests' server turns the limits off)
        try await withServer(configure: { c in
            let defaults = ServerConfiguration()
            c.rateLimit = defaults.rateLimit
            c.authFailureLimit = defaults.authFailureLimit
        }) { s in
            try await s.call(.POST, "/v1/events", token: "admin-token", body: Fixture.array([Fixture.registered("alice", "phone")]))
            // one token makes 600 requests as fast as it can: none is refused
            let refused = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        var n = 0
                        for _ in 0..<75 where try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token").status == 429 { n += 1 }
                        return n
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(refused == 0)
        }
    }

    @Test func failedAuthenticationsFromOneAddressAreLimited() async throws {
        try await withServer(configure: { $0.authFailureLimit = RateLimit(perSecond: 0.001, burst: 5) }) { s in
            for k in 0..<5 {
                #expect(try await s.call(.GET, "/v1/users/alice/devices", token: "guess-\(k)").status == 401)
            }
            let r = try await s.call(.GET, "/v1/users/alice/devices", token: "guess-5")
            #expect(r.status == 429 && r.error == "rate_limited")
            #expect(r.headers.first(name: "Retry-After") != nil)
            // Even a right guess is not looked at now: guessing gains nothing
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token").status == 429)
            #expect(try await s.call(.GET, "/health", token: nil).status == 200)
            #expect(s.server.authFailures?.count == 1)
        }
    }

    @Test func verificationsRunningAtOnceAreBounded() async throws {
        try await withServer(configure: { $0.maxConcurrentVerifies = 1 }) { s in
            // Given one verification running (its slot held)
            #expect(s.server.verifySlots.tryAcquire())
            let r = try await s.call(.GET, "/v1/verify", token: "auditor-token")
            #expect(r.status == 429 && r.error == "rate_limited")
            s.server.verifySlots.release()
            #expect(try await s.call(.GET, "/v1/verify", token: "auditor-token").status == 200)
            #expect(s.server.verifySlots.inUse == 0)
        }
    }

    @Test func aVerificationRunsOnTheServersPoolForBlockingWorkNotANewThread() async throws {
        // Given a server whose runner of blocking work (by default NIO's pool) is watched
        let watched = WatchedRunner(ServerConfiguration().blockingWorkRunner)
        try await withServer(configure: { $0.blockingWorkRunner = watched }) { s in
            #expect(try await s.call(.POST, "/v1/events", token: "admin-token", body: Fixture.array([Fixture.registered("alice", "phone")])).status == 201)
            // When a verification is asked for, then the LMDB checks ran once, on a thread of NIO's singleton pool
            let r = try await s.call(.GET, "/v1/verify", token: "auditor-token")
            #expect(r.status == 200 && r["ok"] == .bool(true) && r["head"]?["seq"] == .int(1), "\(r.body)")
            #expect(watched.threads == ["SGLTN-TP-#"])
        }
    }
}

/// The `http` fuzz target's corpus (Fuzz/corpus/http: seeds and any crash found, kept as
/// a regression input), replayed against the router: no 5xx, no undocumented status.
@Suite(.timeLimit(.minutes(3))) struct HTTPFuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theHTTPCorpusRunsClean() async throws {
        let dir = Self.root.appendingPathComponent("Fuzz/corpus/http")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(names.count >= 100)
        for name in names {
            try await HTTPFuzzCheck.check(Array(try Data(contentsOf: dir.appendingPathComponent(name))))
        }
    }

    @Test func inputsReachEveryRouteWithTheirQueriesAndHeaders() async throws {
        let endpoints = try await TestServer.endpointsForFuzz()
        var seen = Set<String>()
        for k in 0..<endpoints.count {
            let (request, route) = HTTPFuzzCheck.makeRequest([UInt8(k), 0] + Array("bob".utf8) + [0xFF, 0xFF] + Array("at=1&asOf=x".utf8) + [0xFF]
                                                             + Array("Last-Event-ID: 7".utf8) + [0xFF] + Array("{}".utf8), endpoints: endpoints)
            seen.insert(route)
            #expect(request.uri.query == "at=1&asOf=x")
            #expect(request.headers[HTTPField.Name("Last-Event-ID")!] == "7")
        }
        #expect(seen.count == endpoints.count)
    }
}

/// A `BlockingWorkRunner` that hands the work to `inner` and notes, per body run, the
/// name of its thread without the number (`NIOThreadPool.singleton`'s threads are
/// `SGLTN-TP-#0`, `SGLTN-TP-#1`, …; Linux's /proc/thread-self/comm).
final class WatchedRunner: BlockingWorkRunner {
    private let inner: any BlockingWorkRunner
    private let names = Mutex<[String]>([])

    init(_ inner: any BlockingWorkRunner) { self.inner = inner }

    var threads: [String] { names.withLock { $0 } }

    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await inner.run { [self] in
            let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
            names.withLock { $0.append(String(comm.trimmingCharacters(in: .whitespacesAndNewlines).prefix { !$0.isNumber })) }
            return try body()
        }
    }
}
