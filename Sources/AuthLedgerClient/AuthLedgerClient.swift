import AsyncHTTPClient
import AuthLedgerCore
import NIOCore
import NIOHTTP1

/// A client of an AuthLedger server (`authledger serve`) for Swift services on other hosts.
///
/// Every command and query of the HTTP API is a typed `async` call: commands take the same
/// ``/AuthLedgerCore/Command`` values the in-process ledger performs, queries answer the same typed values
/// (``/AuthLedgerCore/DeviceList``, ``/AuthLedgerCore/CoolingAnswer``, ``/AuthLedgerCore/PendingChallenge``, ``/AuthLedgerCore/ChallengeView``,
/// ``/AuthLedgerCore/RecordedEvent``), and refusals arrive as ``AuthLedgerClientError/refused(_:)`` with
/// their stable codes and data. The event feed, durable subscriptions and watches are
/// `AsyncSequence`s that reconnect by themselves with `Last-Event-ID`: no gap, no duplicate,
/// no repeated snapshot.
///
/// Built on AsyncHTTPClient (the connection pool, TLS, timeouts) and OpenAPIRuntime's
/// Server-Sent Events decoding; the answers are read with the core's own JSON parser, the
/// one the server writes them with. No server, driver or LMDB code is compiled into it.
public struct AuthLedgerClient: Sendable {
    /// The server's base URL, without a trailing slash (`http://127.0.0.1:8080`).
    public let baseURL: String
    /// The bearer token sent with every request (nil: none).
    public let token: String?
    /// The HTTP client requests go through (AsyncHTTPClient's `HTTPClient.shared` unless given).
    public let httpClient: HTTPClient
    /// How long a plain request may take (streams and waits are not bound by it).
    public var requestTimeout: TimeAmount = .seconds(30)
    /// The first pause before a stream reconnects; it doubles up to ``maxReconnectDelay``.
    public var reconnectDelay: Duration = .milliseconds(100)
    /// The longest pause between two reconnection attempts.
    public var maxReconnectDelay: Duration = .seconds(5)

    /// A client of the server at `baseURL` with `token`.
    public init(baseURL: String, token: String?, httpClient: HTTPClient = .shared) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.token = token
        self.httpClient = httpClient
    }

    // MARK: - Requests

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]

        func json() throws(AuthLedgerClientError) -> JSON {
            do { return try JSON.parse(body) } catch {
                throw .invalidAnswer("the answer (\(status)) is not JSON: \(error)")
            }
        }
    }

    /// `path` with its query: each value percent-encoded, nil values left out.
    func url(_ path: String, _ query: [(String, String?)] = []) -> String {
        let items = query.compactMap { k, v in v.map { "\(k)=\(Self.escaped($0))" } }
        return baseURL + path + (items.isEmpty ? "" : "?" + items.joined(separator: "&"))
    }

    /// One path segment or query value: RFC 3986's unreserved characters as they are, every
    /// other byte of its UTF-8 as `%XX` (user keys may hold `/`, `:`, spaces, any letter).
    static func escaped(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out += "%" + String(hex[Int(b >> 4)]) + String(hex[Int(b & 15)])
            }
        }
        return out
    }

    /// `/v1/users/{user}` followed by `rest` (whose segments are already escaped).
    static func userPath(_ user: String, _ rest: String = "") -> String { "/v1/users/" + escaped(user) + rest }

    func request(_ method: HTTPMethod, _ url: String, body: JSON? = nil, headers: [(String, String)] = []) -> HTTPClientRequest {
        var req = HTTPClientRequest(url: url)
        req.method = method
        if let token { req.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (k, v) in headers { req.headers.add(name: k, value: v) }
        if let body {
            req.headers.add(name: "Content-Type", value: "application/json")
            req.body = .bytes(ByteBuffer(string: body.serialized()))
        }
        return req
    }

    /// Sends a request and reads its whole answer; a refusal (a status of 400 or more with an
    /// error document) is thrown as ``AuthLedgerClientError/refused(_:)``.
    func send(_ method: HTTPMethod, _ path: String, query: [(String, String?)] = [], body: JSON? = nil,
              timeout: TimeAmount? = nil, maxBytes: Int = 64 << 20) async throws(AuthLedgerClientError) -> Answer {
        let req = request(method, url(path, query), body: body)
        let answer: Answer
        do {
            let response = try await httpClient.execute(req, timeout: timeout ?? requestTimeout)
            var buffer = try await response.body.collect(upTo: maxBytes)
            answer = Answer(status: Int(response.status.code), headers: response.headers,
                            body: buffer.readBytes(length: buffer.readableBytes) ?? [])
        } catch {
            throw .transport("\(method) \(path): \(error)")
        }
        if answer.status >= 400 { throw Self.refusal(answer) }
        return answer
    }

    /// The refusal an error answer carries (an answer that is not an error document is an invalid answer).
    static func refusal(_ answer: Answer) -> AuthLedgerClientError {
        let retryAfter = answer.headers.first(name: "Retry-After").flatMap { Int($0) }
        guard let json = try? JSON.parse(answer.body), let r = Refusal(status: answer.status, json: json, retryAfter: retryAfter) else {
            return .invalidAnswer("status \(answer.status) without an error document")
        }
        return .refused(r)
    }

    /// Reads an answer's JSON as `T` with the core's decoder for it; a mismatch is an invalid answer.
    static func decode<T>(_ json: JSON, _ f: (JSON) throws(LedgerError) -> T) throws(AuthLedgerClientError) -> T {
        do { return try f(json) } catch { throw .invalidAnswer(error.message) }
    }
}
