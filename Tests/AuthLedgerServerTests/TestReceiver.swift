import AuthLedger
@testable import AuthLedgerServer
@testable import AuthLedgerSharedSignals
import Foundation
import Hummingbird
import JWTKit
import ServiceLifecycle
import AuthLedgerTestSupport
import Testing

/// An RFC 8935 receiver on a loopback port: 202 for every SET, 400 for one it is told
/// to refuse, 503 while "down".
final class TestReceiver: @unchecked Sendable {
    struct Headers { var contentType: String?; var authorization: String? }
    private let lock = NSLock()
    private var received: [String] = []
    private var seen = Set<UInt64>()
    private var hdrs: [Headers] = []
    private var down = false
    private var refused: UInt64?
    private var failures = 0
    let url: String
    private let group: ServiceGroup
    private let task: Task<Void, Error>

    private init(url: String, group: ServiceGroup, task: Task<Void, Error>) {
        self.url = url
        self.group = group
        self.task = task
    }

    static func start() async throws -> TestReceiver {
        let box = Box()
        let router = Router()
        router.post("/events") { req, _ -> Response in
            let body = String(buffer: try await req.body.collect(upTo: 1 << 20))
            return box.receiver!.handle(body, Headers(contentType: req.headers[.contentType], authorization: req.headers[.authorization]))
        }
        let (ports, cont) = AsyncStream.makeStream(of: Int.self)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { cont.yield($0.localAddress?.port ?? 0) })
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: .init(label: "receiver")))
        let task = Task { try await group.run() }
        var it = ports.makeAsyncIterator()
        let port = await it.next() ?? 0
        let r = TestReceiver(url: "http://127.0.0.1:\(port)/events", group: group, task: task)
        box.receiver = r
        return r
    }

    final class Box: @unchecked Sendable { var receiver: TestReceiver? }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }

    func handle(_ body: String, _ h: Headers) -> Response {
        lock.withLock {
            if down { failures += 1; return Response(status: .serviceUnavailable) }
            let payload = body.split(separator: ".").dropFirst().first.flatMap { Data(base64urlText: String($0)) }
            let jti = payload.flatMap { try? JSON.parse(Array($0)) }?["jti"]?.stringValue ?? ""
            let seq = UInt64(jti.split(separator: "-").last ?? "")
            if let seq, seq == refused {
                refused = nil
                seen.insert(seq)
                return Response(status: .badRequest, headers: [.contentType: "application/json"],
                                body: .init(byteBuffer: ByteBuffer(string: #"{"err":"invalid_request","description":"no thanks"}"#)))
            }
            received.append(body)
            hdrs.append(h)
            if let seq { seen.insert(seq) }
            return Response(status: .accepted)
        }
    }

    func refuse(seq: UInt64) { lock.withLock { refused = seq } }
    func setDown(_ d: Bool) { lock.withLock { down = d } }
    var failedAttempts: Int { lock.withLock { failures } }
    var tokens: [String] { lock.withLock { received } }
    var headers: [Headers] { lock.withLock { hdrs } }

    /// Waits (bounded) until a delivery attempt was refused while the receiver was down.
    func waitForAFailedAttempt() async throws {
        for _ in 0..<600 {
            if failedAttempts > 0 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits (bounded) until a SET of ledger seq `seqs` (the highest expected) arrived.
    func waitFor(seqs: UInt64) async throws {
        for _ in 0..<600 {
            if lock.withLock({ seen.contains(seqs) }) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("no SET for seq \(seqs) arrived")
    }
}
