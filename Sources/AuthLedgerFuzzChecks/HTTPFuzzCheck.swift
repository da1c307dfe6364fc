import AuthLedgerLMDB
import AuthLedgerServer
import AuthLedgerSharedSignals
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import Logging
import NIOCore
import NIOEmbedded

/// The HTTP fuzz target's check: one request built from untrusted bytes — which route,
/// its path parameters, query string, headers and body — answered by the real router
/// in process (no socket). Any 5xx, any status the API does not document, or a thrown
/// error that is not an HTTP error below 500 is a ``FuzzFailure`` (the fuzz target stops
/// the process on it, which libFuzzer records as a crash; the tests record an issue).
///
/// Input layout: byte 0 picks the route, byte 1 the variant (bit 0: no token, bit 1: a
/// read token instead of admin, bits 2–3: another method), then fields separated by 0xFF:
/// path parameter 1, path parameter 2, the query string, header lines (`Name: value`,
/// one per line) and the body.
public enum HTTPFuzzCheck {
    /// The statuses the API answers with.
    static let documented: Set<Int> = [200, 201, 204, 400, 401, 403, 404, 405, 409, 423, 429]

    final class Harness: Sendable {
        let server: LedgerServer
        let responder: RouterResponder<ServerRequestContext>
        let endpoints: [Endpoint]
        // The thread-safe test channel: checks run on whichever thread the cooperative pool gives them.
        let channel = NIOAsyncTestingChannel()

        init() async throws {
            let dir = NSTemporaryDirectory() + "authledger-http-fuzz-\(getpid())"
            try? FileManager.default.removeItem(atPath: dir)
            let ledger = try await Ledger(lmdb: dir)
            // A little history so that queries and commands meet existing state.
            let at = "2026-03-01T09:00:00Z"
            let seed = """
            {"type":"device.registered","user":"alice","at":"\(at)","data":{"deviceId":"iphone","name":"Alice iPhone","kind":"mobile","binding":"permanent","via":"initial"}}
            {"type":"device.registered","user":"alice","at":"\(at)","data":{"deviceId":"laptop","name":"Alice laptop","kind":"desktop","binding":"permanent","via":"admin"}}
            {"type":"challenge.issued","user":"alice","at":"\(at)","data":{"challengeId":"c1","action":"login","requestingDeviceId":"laptop","expiresAt":"2026-03-01T09:01:00Z"}}
            """
            _ = try await ledger.append(try EventDecoder.decodeLines(Array(seed.utf8)).map(\.input))
            var config = ServerConfiguration()
            config.tokens = try TokenStore(parsing: "fuzz-admin:admin,fuzz-reader:read")
            config.rateLimit = nil
            config.authFailureLimit = nil
            config.sweepInterval = nil
            config.readerCheckInterval = nil
            // The fuzz checks the contract, not the store's speed: a loaded machine must not turn
            // /readyz into its (documented) 503 "the store is slow" and fail the run.
            config.readinessTimeout = .seconds(120)
            // Shared Signals: a configured issuer (no listening address in process) and
            // polls that answer at once instead of waiting for events.
            config.sharedSignals.issuer = "https://fuzz.example"
            config.sharedSignals.pollWait = .milliseconds(1)
            let now = Timestamp(rfc3339: "2026-03-01T09:00:30Z")!
            config.clock = { now }
            server = try LedgerServer(ledger: ledger, configuration: config, logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }))
            let routes = server.buildRouter()
            responder = routes.router.buildResponder()
            // Key rotation is left out: each call generates an RSA-2048 key (about a second
            // under ASan, and the retained keys pile up under the harness's frozen clock),
            // which made the target slower by the minute without reaching new code paths;
            // rotation has its own tests (SharedSignalsTests).
            endpoints = routes.endpoints.filter { $0.path != "/ssf/keys/rotate" }
        }
    }

    /// The harness, made by the first check (the others await the same making).
    private static let shared = Mutex<Task<Harness, any Error>?>(nil)

    static func harness() async throws -> Harness {
        let making = shared.withLock { shared in
            if let t = shared { return t }
            let t = Task { try await Harness() }
            shared = t
            return t
        }
        do {
            return try await making.value
        } catch {
            throw FuzzFailure("the fuzz harness cannot start: \(error)")
        }
    }

    /// Runs one input (blocking; for libFuzzer and the replayer, not for async callers).
    public static func run(_ bytes: [UInt8]) throws {
        let done = DispatchSemaphore(value: 0)
        let failure = Mutex<FuzzFailure?>(nil)
        Task.detached {
            do { try await check(bytes) } catch { failure.withLock { $0 = error as? FuzzFailure ?? FuzzFailure("\(error)") } }
            done.signal()
        }
        done.wait()
        if let f = failure.withLock({ $0 }) { throw f }
    }

    /// Runs one input; throws a ``FuzzFailure`` when the answer breaks the contract.
    public static func check(_ bytes: [UInt8]) async throws {
        let h = try await harness()
        let (request, route) = makeRequest(bytes, endpoints: h.endpoints)
        let context = ServerRequestContext(source: .init(channel: h.channel, logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })))
        let status: Int
        do {
            status = Int(try await h.responder.respond(to: request, context: context).status.code)
        } catch let e as HTTPError where e.status.code < 500 {
            status = Int(e.status.code)
        } catch {
            throw FuzzFailure("\(route) \(request.uri): threw \(error)")
        }
        try FuzzFailure.require(status < 500 && documented.contains(status), "\(route) \(request.uri): status \(status)")
    }

    /// The request an input stands for, and the route it aimed at (for messages).
    static func makeRequest(_ bytes: [UInt8], endpoints: [Endpoint]) -> (Request, String) {
        guard bytes.count >= 2, !endpoints.isEmpty else {
            return (Request(head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/health"), body: .init(buffer: ByteBuffer())), "GET /health")
        }
        let endpoint = endpoints[Int(bytes[0]) % endpoints.count]
        let variant = bytes[1]
        let fields = bytes.dropFirst(2).split(separator: 0xFF, maxSplits: 4, omittingEmptySubsequences: false).map(Array.init)
        func field(_ k: Int) -> [UInt8] { k < fields.count ? fields[k] : [] }

        var params = [field(0), field(1)].makeIterator()
        let path = endpoint.path.split(separator: "/").map { segment -> String in
            guard segment.hasPrefix("{") else { return String(segment) }
            let raw = params.next() ?? []
            return raw.isEmpty ? "alice" : percentEncoded(raw, keep: "")
        }.joined(separator: "/")
        let query = field(2)
        let target = "/" + path + (query.isEmpty ? "" : "?" + percentEncoded(query, keep: "&=,:+"))

        var method = HTTPRequest.Method(endpoint.method) ?? .get
        switch (variant >> 2) & 3 {
        case 1: method = .get
        case 2: method = .post
        case 3: method = [.put, .delete, .patch, .head, .options][Int(variant >> 4) % 5]
        default: break
        }
        var headers = HTTPFields()
        if variant & 1 == 0 {
            headers[.authorization] = "Bearer " + (variant & 2 == 0 ? "fuzz-admin" : "fuzz-reader")
        }
        for line in field(3).split(separator: 10) {
            let text = String(decoding: line, as: UTF8.self)
            guard let colon = text.firstIndex(of: ":"), let name = HTTPField.Name(String(text[..<colon])) else { continue }
            headers.append(HTTPField(name: name, value: String(text[text.index(after: colon)...]).trimmingWhitespace()))
        }
        let body = field(4)
        if !body.isEmpty, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        let head = HTTPRequest(method: method, scheme: "http", authority: "localhost", path: target, headerFields: headers)
        return (Request(head: head, body: .init(buffer: ByteBuffer(bytes: body))), endpoint.description)
    }

    /// Percent-encodes every byte but unreserved ones and those in `keep`.
    static func percentEncoded(_ bytes: [UInt8], keep: String) -> String {
        let kept = Set(keep.utf8)
        var out = ""
        for b in bytes {
            let unreserved = (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 45 || b == 46 || b == 95 || b == 126
            if unreserved || kept.contains(b) {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += String(format: "%%%02X", b)
            }
        }
        return out
    }
}
