import AuthLedger
@testable import AuthLedgerServer
import AuthLedgerTestSupport
import Foundation
import NIOHTTP1
import Testing

/// RouteAccess is each route's access middleware, not each handler's: every route the server
/// serves — taken from its own endpoint list, not a hand-written one — refuses a missing
/// token (401) and a token without its scope (403), in the API's error form.
@Suite struct AccessMiddlewareTests {
    /// A token of the test server that lacks `scope`.
    static func tokenWithout(_ scope: Scope) -> String {
        switch scope {
        case .read: "writer-token"
        case .write, .audit, .import: "reader-token"
        case .admin: "rw-token"
        }
    }

    @Test func everyRouteIsBehindItsGroupsAccessCheck() async throws {
        let s = try await TestServer.start()
        defer { Task { try? await s.stop() } }
        var checked = 0
        for e in s.server.endpoints {
            // A concrete path: each `{name}` a plain segment, `{name+}` one segment too.
            let path = e.path.split(separator: "/").map { $0.hasPrefix("{") ? "x1" : String($0) }.joined(separator: "/")
            let method = HTTPMethod(rawValue: e.method)
            let body: String? = e.method == "GET" || e.method == "DELETE" ? nil : "{}"
            switch e.access {
            case .open:
                let r = try await s.call(method, "/" + path, token: nil, body: body)
                #expect(r.status != 401 && r.status != 403, "\(e)")
            case .authenticated:
                let r = try await s.call(method, "/" + path, token: nil, body: body)
                #expect(r.status == 401 && r.error == "unauthorized", "\(e)")
            case let .scope(scope):
                let none = try await s.call(method, "/" + path, token: nil, body: body)
                #expect(none.status == 401 && none.error == "unauthorized", "\(e) without a token")
                #expect(none.headers.first(name: "WWW-Authenticate") == "Bearer realm=\"authledger\"", "\(e)")
                let other = try await s.call(method, "/" + path, token: Self.tokenWithout(scope), body: body)
                #expect(other.status == 403 && other.error == "forbidden", "\(e) without \(scope)")
                let unknown = try await s.call(method, "/" + path, token: "no-such-token", body: body)
                #expect(unknown.status == 401, "\(e) with an unknown token")
            }
            checked += 1
        }
        #expect(checked == s.server.endpoints.count && checked > 30)
    }
}
