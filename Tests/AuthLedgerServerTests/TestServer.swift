import AsyncHTTPClient
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerServer
import AuthLedgerTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// A clock the tests move (time is an input: no sleeping until a window closes).
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var t: Timestamp
    init(_ start: String = "2026-03-01T09:00:00Z") { t = Timestamp(rfc3339: start)! }
    var now: Timestamp { lock.withLock { t } }
    func advance(seconds: Int64) { lock.withLock { t = t.adding(seconds: seconds) } }
}

struct HTTPResult {
    var status: Int
    var headers: HTTPHeaders
    var body: String
    var json: JSON? { try? JSON.parse(body) }
    subscript(key: String) -> JSON? { json?[key] }
    var error: String? { self["error"]?.stringValue }
}

/// Where a test server keeps its state, kept across restarts: the store (an LMDB directory,
/// or a PostgreSQL URL with a schema of its own) and the directory of the files beside the
/// log (keys: the store directory itself on LMDB).
struct TestStore: Sendable {
    let storage: StorageKind
    let store: String
    let dir: String

    init(_ storage: StorageKind = .lmdb) {
        self.storage = storage
        store = storage == .lmdb ? TestServer.temporaryDirectory() : storage.freshStore()
        dir = storage == .lmdb ? store : storage.keyDirectory(for: store)
    }

    /// An LMDB store in `directory` (a particular filesystem).
    init(lmdbDirectory directory: String) {
        storage = .lmdb
        store = directory
        dir = directory
    }

    /// The ledger on this store, as the server opens it.
    func open() async throws -> Ledger { try await Ledger(store: store, configuration: .init(keyDirectory: dir)) }

    /// Removes the temporary directory (a PostgreSQL schema stays until the test server is thrown away).
    func remove() { try? FileManager.default.removeItem(atPath: dir) }
}

/// The real server on a loopback port picked by the kernel, over a fresh store (LMDB or
/// PostgreSQL), driven over HTTP with async-http-client.
final class TestServer: @unchecked Sendable {
    static let tokens = "admin-token:admin,reader-token:read,writer-token:write,auditor-token:audit,rw-token:read+write,importer-token:import,reader2-token:read"

    /// Where its state lives (`place.store` for the CLI's `--store`).
    let place: TestStore
    /// The directory of the files beside the log (the store directory on LMDB).
    var dir: String { place.dir }
    let clock: TestClock
    let port: Int
    let client: HTTPClient
    /// The server object (for tests that look at its limits).
    let server: LedgerServer
    private(set) var group: ServiceGroup?
    private var running: Task<Void, Error>?

    static func temporaryDirectory() -> String {
        TemporaryDirectory.path("authledger-server")
    }

    private init(place: TestStore, clock: TestClock, port: Int, server: LedgerServer, group: ServiceGroup, running: Task<Void, Error>) {
        self.server = server
        self.place = place
        self.clock = clock
        self.port = port
        self.group = group
        self.running = running
        client = Self.sharedClient
    }

    /// One client for the whole test process, never shut down: a client dropped without
    /// `shutdown()` (a test that threw half-way) is a fatal error in AsyncHTTPClient and
    /// would take every other running test down with it.
    static let sharedClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(
        connectionPool: .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)))

    /// A server on `place` (a restart passes the place of the server before), else on a fresh store of `storage`.
    static func start(_ storage: StorageKind = .lmdb, at place: TestStore? = nil, clock: TestClock = TestClock(),
                      configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
        let place = place ?? TestStore(storage)
        var config = ServerConfiguration()
        config.port = 0
        config.tokens = try TokenStore(parsing: tokens)
        config.pollInterval = .milliseconds(50)
        config.heartbeatInterval = .seconds(1)
        config.sweepInterval = .milliseconds(100)
        config.clock = { clock.now }
        // The per-token limits are off unless a test sets them (LimitTests): the
        // other suites make requests and open streams as fast as they like.
        config.rateLimit = nil
        config.authFailureLimit = nil
        config.maxSubscribersPerToken = nil
        configure(&config)
        let server = try await LedgerServer(ledger: try place.open(), configuration: config)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let group = server.serviceGroup(gracefulShutdownSignals: [], onListening: { continuation.yield($0) })
        let running = Task { try await group.run() }
        var it = ports.makeAsyncIterator()
        guard let port = await it.next() else { throw TestFailure("the server did not start") }
        return TestServer(place: place, clock: clock, port: port, server: server, group: group, running: running)
    }

    /// Graceful shutdown; returns once the server has stopped (bounded by the caller's test timeout).
    func stop() async throws {
        if let group { await group.triggerGracefulShutdown() }
        try await running?.value
        group = nil
        running = nil
    }

    func removeStore() { place.remove() }

    var base: String { "http://127.0.0.1:\(port)" }

    func request(_ method: HTTPMethod, _ path: String, token: String? = "admin-token", body: String? = nil,
                 headers: [(String, String)] = []) -> HTTPClientRequest {
        TestServer.request(base: base, method, path, token: token, body: body, headers: headers)
    }

    /// A request to the server at `base`, with a bearer token and a JSON body when given.
    static func request(base: String, _ method: HTTPMethod, _ path: String, token: String?, body: String?,
                        headers: [(String, String)]) -> HTTPClientRequest {
        var req = HTTPClientRequest(url: base + path)
        req.method = method
        if let token { req.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (k, v) in headers { req.headers.add(name: k, value: v) }
        if let body {
            req.headers.add(name: "Content-Type", value: "application/json")
            req.body = .bytes(ByteBuffer(string: body))
        }
        return req
    }

    @discardableResult
    func call(_ method: HTTPMethod, _ path: String, token: String? = "admin-token", body: String? = nil,
              headers: [(String, String)] = []) async throws -> HTTPResult {
        let resp = try await client.execute(request(method, path, token: token, body: body, headers: headers), timeout: .seconds(30))
        let buffer = try await resp.body.collect(upTo: 256 << 20)
        return HTTPResult(status: Int(resp.status.code), headers: resp.headers, body: String(buffer: buffer))
    }

    /// Opens an event stream; returns once the response head arrived (the stream's
    /// start position is fixed by then).
    func subscribe(_ path: String, token: String = "reader-token", lastEventID: UInt64? = nil) async throws -> SSEClient {
        var headers: [(String, String)] = [("Accept", "text/event-stream")]
        if let lastEventID { headers.append(("Last-Event-ID", "\(lastEventID)")) }
        let resp = try await client.execute(request(.GET, path, token: token, headers: headers), timeout: .seconds(600))
        return SSEClient(resp)
    }

    /// Opens an event stream and never reads it: a stalled subscriber.
    func openWithoutReading(_ path: String) async throws -> HTTPClientResponse {
        try await client.execute(request(.GET, path, token: "reader-token"), timeout: .seconds(600))
    }

    /// Polls `/metrics` until `name` reaches `atLeast` (bounded).
    func waitForMetric(_ name: String, atLeast: Double, attempts: Int = 300) async throws -> Double {
        var last = 0.0
        for _ in 0..<attempts {
            last = try await metric(name) ?? 0
            if last >= atLeast { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        return last
    }

    /// Polls `/metrics` until `name` falls to `atMost` (bounded).
    func waitForMetric(_ name: String, atMost: Double, attempts: Int = 300) async throws -> Double {
        var last = Double.infinity
        for _ in 0..<attempts {
            last = try await metric(name) ?? 0
            if last <= atMost { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        return last
    }

    func metric(_ name: String) async throws -> Double? {
        let text = try await call(.GET, "/metrics", token: "reader-token").body
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
            return Double(line.split(separator: " ").last!)
        }
        return nil
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

struct SSEEvent: Sendable {
    var id: UInt64?
    var event: String?
    var data: String
    var json: JSON? { try? JSON.parse(data) }
}

/// Reads an event stream in the background into a list the test polls (bounded waits).
final class SSEClient: @unchecked Sendable {
    let status: Int
    let contentType: String?
    private let lock = NSLock()
    private var received: [SSEEvent] = []
    private var commentCount = 0
    private var finished = false
    private var reader: Task<Void, Never>?

    init(_ response: HTTPClientResponse) {
        status = Int(response.status.code)
        contentType = response.headers.first(name: "Content-Type")
        reader = Task { [weak self] in
            var pending = ""
            do {
                for try await chunk in response.body {
                    pending += String(buffer: chunk)
                    while let range = pending.range(of: "\n\n") {
                        let block = String(pending[..<range.lowerBound])
                        pending = String(pending[range.upperBound...])
                        self?.parse(block)
                    }
                }
            } catch {}
            self?.lock.withLock { self?.finished = true }
        }
    }

    private func parse(_ block: String) {
        var e = SSEEvent(id: nil, event: nil, data: "")
        var isEvent = false
        for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(":") {
                lock.withLock { commentCount += 1 }
            } else if line.hasPrefix("id: ") {
                e.id = UInt64(line.dropFirst(4))
            } else if line.hasPrefix("event: ") {
                e.event = String(line.dropFirst(7))
            } else if line.hasPrefix("data: ") {
                e.data += String(line.dropFirst(6))
                isEvent = true
            }
        }
        if isEvent { lock.withLock { received.append(e) } }
    }

    var events: [SSEEvent] { lock.withLock { received } }
    var comments: Int { lock.withLock { commentCount } }
    var isFinished: Bool { lock.withLock { finished } }

    /// Waits (bounded) until at least `count` events arrived; returns them all.
    @discardableResult
    func waitFor(count: Int, attempts: Int = 400) async throws -> [SSEEvent] {
        for _ in 0..<attempts {
            let now = events
            if now.count >= count { return now }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("expected \(count) events, got \(events.count): \(events.map { $0.id ?? 0 })")
    }

    func waitUntil(attempts: Int = 400, _ condition: (SSEClient) -> Bool) async throws {
        for _ in 0..<attempts {
            if condition(self) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("condition not met; events \(events.map { $0.id ?? 0 })")
    }

    func close() { reader?.cancel() }
}

/// JSON lines of fixture events for `POST /v1/events` bodies.
enum Fixture {
    static func registered(_ user: String, _ device: String, at: String = "2026-03-01T08:00:00Z", via: String = "initial") -> String {
        #"{"type":"device.registered","user":"\#(user)","at":"\#(at)","data":{"deviceId":"\#(device)","name":"Device \#(device)","kind":"mobile","binding":"permanent","via":"\#(via)"}}"#
    }

    /// An access `second` seconds after 08:00, with optional bulky `meta` (`padding` bytes).
    static func accessed(_ user: String, _ device: String, second: Int, padding: Int = 0) -> String {
        let at = Timestamp(rfc3339: "2026-03-01T08:00:00Z")!.adding(seconds: Int64(second)).formatted
        var meta = ""
        if padding > 0 {
            let chunk = String(repeating: "x", count: 1000)
            meta = #","meta":{"# + (0..<max(1, padding / 1000)).map { #""k\#($0)":"\#(chunk)""# }.joined(separator: ",") + "}"
        }
        return #"{"type":"device.accessed","user":"\#(user)","at":"\#(at)","data":{"deviceId":"\#(device)"}\#(meta)}"#
    }

    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }
}

extension TestServer {
    /// Every route of a server (no store needed to list them).
    static func endpointsForFuzz() async throws -> [Endpoint] {
        var config = ServerConfiguration()
        config.insecureDev = true
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        return try LedgerServer(ledger: try await Ledger(lmdb: dir), configuration: config).endpoints
    }
}
