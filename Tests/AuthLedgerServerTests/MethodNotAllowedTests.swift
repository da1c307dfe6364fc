import AuthLedger
@testable import AuthLedgerServer
import AuthLedgerTestSupport
import NIOHTTP1
import Testing

/// A known path asked with a method it does not have is 405 with `Allow` listing the methods
/// it has (in the order the routes were registered), in the API's error form and before any
/// token is looked at; an unknown path stays 404 without `Allow`.
@Suite(.timeLimit(.minutes(2))) struct MethodNotAllowedTests {
    /// One route of each family (and each method shape), asked with a method it lacks.
    static let cases: [(method: String, path: String, allow: String)] = [
        // operations and probes
        ("PUT", "/health", "GET"), ("POST", "/livez", "GET"), ("DELETE", "/readyz", "GET"), ("POST", "/metrics", "GET"),
        // users
        ("PUT", "/v1/users/alice/devices", "GET, POST, DELETE"), ("GET", "/v1/users/alice/devices/iphone", "PATCH, DELETE"),
        ("POST", "/v1/users/alice/history", "GET"), ("DELETE", "/v1/users", "GET"),
        ("GET", "/v1/users/alice/challenges/c1/approve", "POST"), ("PATCH", "/v1/users/alice/cooling", "GET"),
        // the log
        ("DELETE", "/v1/events", "POST, GET"), ("POST", "/v1/verify", "GET"), ("GET", "/v1/policy", "PUT"), ("POST", "/v1/export", "GET"),
        // subscriptions and watches
        ("POST", "/v1/subscriptions/s1", "PUT, GET, DELETE"), ("GET", "/v1/subscriptions/s1/ack", "POST"),
        ("POST", "/v1/watch", "GET"), ("PROPFIND", "/v1/watch", "GET"),
        // erasure and device proofs
        ("GET", "/v1/users/alice", "DELETE"), ("GET", "/v1/users/alice/devices/iphone/key", "POST"),
        ("GET", "/v1/verification-links/redeem", "POST"),
        // Shared Signals
        ("DELETE", "/ssf/jwks", "GET"), ("OPTIONS", "/ssf/streams", "POST, GET, PATCH, PUT, DELETE"), ("GET", "/ssf/poll/st1", "POST"),
        // the verifiable log: checkpoints, tiles (the rest of the path), proofs
        ("POST", "/checkpoint", "GET"), ("POST", "/tile/0/x001/234", "GET"), ("DELETE", "/tile/entries/000.p/17", "GET"),
        ("PUT", "/v1/proofs/inclusion", "GET"),
        // the console
        ("POST", "/console", "GET"), ("DELETE", "/console/app.js", "GET"), ("POST", "/checkpoint/vkey", "GET"),
    ]

    @Test func eachFamilyAnswersAWrongMethodWith405AndAllow() async throws {
        let s = try await TestServer.start()
        defer { Task { try? await s.stop() } }
        for c in Self.cases {
            for token in ["admin-token", nil] {
                let r = try await s.call(HTTPMethod(rawValue: c.method), c.path, token: token)
                #expect(r.status == 405, "\(c.method) \(c.path)")
                #expect(r.headers.first(name: "Allow") == c.allow, "\(c.method) \(c.path)")
                #expect(r.error == "not_found" && r.body.contains("\(c.method) is not allowed on \(c.path)"), "\(c.method) \(c.path): \(r.body)")
            }
        }
        let unknown = try await s.call(.GET, "/v1/nothing-here")
        #expect(unknown.status == 404 && unknown.error == "not_found" && unknown.headers.first(name: "Allow") == nil)
        #expect(unknown.body.contains("no route GET /v1/nothing-here"))
    }

    /// Every route the server lists, asked with a method its path lacks.
    @Test func everyRouteAnswersAWrongMethodWith405() async throws {
        let s = try await TestServer.start()
        defer { Task { try? await s.stop() } }
        let endpoints = s.server.endpoints
        var methods: [String: [String]] = [:]
        for e in endpoints { methods[e.path, default: []].append(e.method) }
        #expect(methods.count > 30)
        for (template, allowed) in methods {
            let path = template.split(separator: "/").map { $0.hasPrefix("{") ? "x1" : String($0) }.joined(separator: "/")
            let wrong = ["PATCH", "PUT", "DELETE", "POST", "GET"].first { !allowed.contains($0) } ?? "OPTIONS"
            let r = try await s.call(HTTPMethod(rawValue: wrong), "/" + path, token: nil)
            #expect(r.status == 405 && r.headers.first(name: "Allow") == allowed.joined(separator: ", "), "\(wrong) \(template)")
        }
    }
}
