import AsyncHTTPClient
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerServer
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Testing

/// Everything the service logs, at trace level.
final class CapturedLogs: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ s: String) { lock.withLock { lines.append(s) } }
    var text: String { lock.withLock { lines.joined(separator: "\n") } }
    var count: Int { lock.withLock { lines.count } }
}

struct CapturingLogHandler: LogHandler {
    let sink: CapturedLogs
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
             file: String, function: String, line: UInt) {
        let all = self.metadata.merging(metadata ?? [:]) { $1 }
        sink.append("\(level) \(source) \(message) \(all)")
    }
}

/// Security properties of the HTTP service (docs/SECURITY.md): tokens, codes, keys and
/// the store location never reach the logs or error bodies; bodies are bounded.
@Suite(.serialized) struct ServiceSecurityTests {
    static let secretToken = "s3cret-admin-token-0123456789"
    static let readerToken = "s3cret-reader-token-9876543210"

    struct Running {
        var dir: String
        var port: Int
        var group: ServiceGroup
        var task: Task<Void, Error>
        var client: HTTPClient
        var logs: CapturedLogs

        func call(_ method: HTTPMethod, _ path: String, token: String?, body: String? = nil,
                  headers: [(String, String)] = []) async throws -> (status: Int, body: String) {
            let req = TestServer.request(base: "http://127.0.0.1:\(port)", method, path, token: token, body: body, headers: headers)
            // Generous: the full suite runs crash and concurrency tests beside this one, and
            // what is checked here is what reaches logs and bodies, not how fast.
            let resp = try await client.execute(req, timeout: .seconds(120))
            let buffer = try await resp.body.collect(upTo: 16 << 20)
            return (Int(resp.status.code), String(buffer: buffer))
        }

        func stop() async throws {
            await group.triggerGracefulShutdown()
            try await task.value
        }
    }

    static func start() async throws -> Running {
        let dir = TemporaryDirectory.path("authledger-sec")
        let logs = CapturedLogs()
        var logger = Logger(label: "authledger.server") { _ in CapturingLogHandler(sink: logs) }
        logger.logLevel = .trace
        var config = ServerConfiguration()
        config.port = 0
        config.tokens = try TokenStore(parsing: "\(secretToken):admin,\(readerToken):read")
        config.sweepInterval = nil
        let server = try LedgerServer(ledger: try await Ledger(lmdb: dir), configuration: config, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let group = server.serviceGroup(gracefulShutdownSignals: [], onListening: { continuation.yield($0) })
        let task = Task { try await group.run() }
        var it = ports.makeAsyncIterator()
        guard let port = await it.next() else { throw TestFailure("the server did not start") }
        return Running(dir: dir, port: port, group: group, task: task,
                       client: TestServer.sharedClient, logs: logs)
    }

    /// Good and bad tokens, an OTP and refusals; the error bodies, the code and the almost-token.
    static func exercise(_ s: Running) async throws -> (bodies: [String], code: String, almost: String) {
        var bodies: [String] = []
        // When it serves good and bad tokens, an OTP and refusals
        let register = try await s.call(.POST, "/v1/users/alice/devices", token: Self.secretToken,
                                        body: #"{"deviceId":"phone","name":"Alice phone","kind":"mobile","binding":"permanent","via":"initial"}"#)
        #expect(register.status == 201 || register.status == 200, "\(register)")
        let otp = try await s.call(.POST, "/v1/users/alice/otps", token: Self.secretToken, body: #"{"channel":"email","target":"alice.hidden@example.com"}"#)
        let answer = try JSON.parse(Array(otp.body.utf8))
        let code = try #require(answer["code"]?.stringValue)
        let otpId = try #require(answer["otpId"]?.stringValue)
        let wrong = code == "000000" ? "111111" : "000000"
        bodies.append(try await s.call(.POST, "/v1/users/alice/otps/\(otpId)/verify", token: Self.secretToken, body: #"{"code":"\#(wrong)"}"#).body)
        let almost = String(Self.secretToken.dropLast()) + "X"
        let unauthorized = try await s.call(.GET, "/v1/users/alice/devices", token: almost)
        #expect(unauthorized.status == 401)
        bodies.append(unauthorized.body)
        let forbidden = try await s.call(.POST, "/v1/users/alice/devices/phone/access", token: Self.readerToken)
        #expect(forbidden.status == 403)
        bodies.append(forbidden.body)
        bodies.append(try await s.call(.GET, "/v1/users/alice/devices", token: nil).body)
        bodies.append(try await s.call(.GET, "/v1/users/alice/devices", token: nil, headers: [("Authorization", "Basic \(Self.secretToken)")]).body)
        bodies.append(try await s.call(.POST, "/v1/users/alice/otps", token: Self.secretToken, body: #"{"channel":"email","target":"no-at-sign-hidden"}"#).body)
        bodies.append(try await s.call(.POST, "/v1/events", token: Self.secretToken, body: "[{not json").body)
        _ = try await s.call(.GET, "/v1/export", token: Self.secretToken)
        _ = try await s.call(.GET, "/health", token: nil)
        return (bodies, code, almost)
    }

    @Test func tokensCodesKeysAndTheStorePathNeverReachLogsOrErrorBodies() async throws {
        // Given a server logging everything at trace level
        let s = try await Self.start()
        // A failed request must still shut the client and server down: an HTTPClient
        // dropped without shutdown() is fatal and would take every other test with it.
        let bodies: [String], code: String, almost: String
        do {
            (bodies, code, almost) = try await Self.exercise(s)
        } catch {
            try? await s.stop()
            throw error
        }
        try await s.stop()
        // Then the logs hold neither a token, nor the code, nor the target, nor the key, nor the store path
        let logs = s.logs.text
        #expect(s.logs.count > 0, "nothing was logged: the check would be vacuous")
        let key = Array(try #require(FileManager.default.contents(atPath: s.dir + "/server.key"))).map { String(format: "%02x", $0) }.joined()
        for secret in [Self.secretToken, Self.readerToken, almost, code, "alice.hidden", "no-at-sign-hidden", key, s.dir] {
            #expect(!logs.contains(secret), "the logs contain \(secret.prefix(12))…")
        }
        // And no error body echoes a token, the code, the target or the store path
        for body in bodies {
            #expect(body.contains("\"error\""), "\(body)")
            for secret in [Self.secretToken, almost, code, "alice.hidden", "no-at-sign-hidden", key, s.dir] {
                #expect(!body.contains(secret), "an error body contains \(secret.prefix(12))…: \(body)")
            }
        }
    }

    @Test func oversizedBodiesAndHeadersAreRefusedAndTheServerStaysUp() async throws {
        let s = try await Self.start()
        do {
            // A command body over 64 KiB, an events body over 4 MiB: 400 payload_too_large (SPEC 5: oversized input is 400)
            let big = #"{"name":""# + String(repeating: "n", count: 70_000) + #""}"#
            let rename = try await s.call(.PATCH, "/v1/users/alice/devices/phone", token: Self.secretToken, body: big)
            #expect(rename.status == 400 && rename.body.contains("payload_too_large"), "\(rename.status) \(rename.body.prefix(200))")
            let events = "[" + String(repeating: " ", count: 5 << 20) + "]"
            let append = try await s.call(.POST, "/v1/events", token: Self.secretToken, body: events)
            #expect(append.status == 400 && append.body.contains("payload_too_large"), "\(append.status) \(append.body.prefix(200))")
            // A 200 KB header: refused or the connection closed, never served
            let hugeHeader = try? await s.call(.GET, "/v1/users/alice/devices", token: Self.secretToken,
                                               headers: [("X-Padding", String(repeating: "p", count: 200_000))])
            if let hugeHeader { #expect(hugeHeader.status >= 400, "a 200 KB header was served: \(hugeHeader.status)") }
            // And the server still answers
            #expect(try await s.call(.GET, "/health", token: nil).status == 200)
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: Self.readerToken).status == 200)
        } catch {
            try? await s.stop()
            throw error
        }
        try await s.stop()
    }
}
