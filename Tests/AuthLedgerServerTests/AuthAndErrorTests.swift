import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerServer
import Foundation
import AuthLedgerTestSupport
import Testing

@Suite(.timeLimit(.minutes(2))) struct AuthTests {
    @Test func tokensAndScopes() throws {
        let store = try TokenStore(parsing: "tokenA:read+audit, tokenB:write\n# ops\nroot:admin\n")
        #expect(store.scopes(of: "tokenA") == [.read, .audit])
        #expect(store.scopes(of: "tokenB") == [.write])
        #expect(store.scopes(of: "root") == Set(Scope.allCases))
        #expect(store.scopes(of: "tokenC") == nil)
        #expect(store.scopes(of: "") == nil)
        #expect(throws: TokenConfigurationError.self) { try TokenStore(parsing: "t:read+superuser") }
        #expect(throws: TokenConfigurationError.self) { try TokenStore(parsing: "no-scopes") }
    }

    @Test func refusesToStartWithoutTokensUnlessInsecureDev() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ledger = try await Ledger(lmdb: dir)
        #expect(throws: TokenConfigurationError.self) { try LedgerServer(ledger: ledger, configuration: ServerConfiguration()) }
        var config = ServerConfiguration()
        config.insecureDev = true
        _ = try LedgerServer(ledger: ledger, configuration: config)
    }

    @Test(arguments: StorageKind.all) func insecureDevServesWithoutTokens(_ storage: StorageKind) async throws {
        try await withServer(storage, configure: { $0.tokens = TokenStore(); $0.insecureDev = true }) { s in
            let r = try await s.call(.POST, "/v1/users/alice/devices", token: nil, body: #"{"deviceId":"phone","name":"Phone one"}"#)
            #expect(r.status == 201)
        }
    }

    @Test(arguments: StorageKind.all) func eachRouteChecksItsScope(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            // (method, path, body, a token that is refused with 403, a token that is let through)
            let cases: [(HTTPMethodName, String, String?, String, String)] = [
                (.GET, "/v1/users/alice/devices", nil, "writer-token", "reader-token"),
                (.GET, "/v1/users/alice/history", nil, "auditor-token", "rw-token"),
                (.POST, "/v1/users/alice/devices", #"{"deviceId":"p1","name":"Phone one"}"#, "reader-token", "writer-token"),
                // Raw events are the import scope's: a write token is refused (it could forge proofs)
                (.POST, "/v1/events", Fixture.array([Fixture.registered("carol", "p")]), "rw-token", "importer-token"),
                (.PUT, "/v1/policy", #"{"coolingSeconds":300}"#, "rw-token", "admin-token"),
                (.GET, "/v1/export", nil, "reader-token", "auditor-token"),
                (.GET, "/v1/verify", nil, "writer-token", "auditor-token"),
                (.PUT, "/v1/subscriptions/mailer", "{}", "writer-token", "reader-token"),
            ]
            for (method, path, body, refused, allowed) in cases {
                var r = try await s.call(method.nio, path, token: nil, body: body)
                #expect(r.status == 401, "\(path) without a token")
                #expect(r.error == "unauthorized")
                #expect(r.headers.first(name: "WWW-Authenticate")?.hasPrefix("Bearer") == true)
                r = try await s.call(method.nio, path, token: "not-a-token", body: body)
                #expect(r.status == 401, "\(path) with an unknown token")
                r = try await s.call(method.nio, path, token: refused, body: body)
                #expect(r.status == 403, "\(path) with \(refused)")
                #expect(r.error == "forbidden")
                r = try await s.call(method.nio, path, token: allowed, body: body)
                #expect((200..<300).contains(r.status), "\(path) with \(allowed): \(r.status) \(r.body)")
            }
            // policy.set is admin's, also through POST /v1/events
            let policy = #"[{"type":"policy.set","at":"2026-03-01T10:00:00Z","data":{"coolingSeconds":0}}]"#
            var p = try await s.call(.POST, "/v1/events", token: "rw-token", body: policy)
            #expect(p.status == 403)
            p = try await s.call(.POST, "/v1/events", token: "admin-token", body: policy)
            #expect(p.status == 201)
            // The event stream checks its scope before streaming
            var r = try await s.call(.GET, "/v1/events?from=1", token: "writer-token")
            #expect(r.status == 403)
            r = try await s.call(.GET, "/v1/users/alice/devices", token: nil, headers: [("Authorization", "Basic YWxpY2U6cHc=")])
            #expect(r.status == 401)
            // The scheme in any case, white space around the token ignored; nothing else passes
            for (header, status) in [("bearer reader-token", 200), ("BeArEr   reader-token \t", 200), ("Bearerx reader-token", 401),
                                     ("Bearer", 401), ("Bearer reader-token x", 401), ("Bearer\treader-token", 401)] {
                r = try await s.call(.GET, "/v1/users/alice/devices", token: nil, headers: [("Authorization", header)])
                #expect(r.status == status, "\(header)")
            }
            // Health needs no token; metrics need one (any scope)
            r = try await s.call(.GET, "/health", token: nil)
            #expect(r.status == 200)
            r = try await s.call(.GET, "/metrics", token: nil)
            #expect(r.status == 401)
            r = try await s.call(.GET, "/metrics", token: "writer-token")
            #expect(r.status == 200)
        }
    }

    @Test func trimmingWhitespaceTakesOnlyTheEnds() {
        #expect(" \t tok en\n".trimmingWhitespace() == "tok en")
        #expect("\u{00A0}\u{2003}tok\u{3000}".trimmingWhitespace() == "tok")
        #expect("tok".trimmingWhitespace() == "tok")
        #expect("é\u{301} ".trimmingWhitespace() == "é\u{301}")
        #expect(" \r\n\t".trimmingWhitespace() == "")
        #expect("".trimmingWhitespace() == "")
        #expect("a b c"[...].trimmingWhitespace() == "a b c")
    }
}

@Suite(.timeLimit(.minutes(2))) struct ErrorStatusTests {
    @Test(arguments: StorageKind.all) func everyErrorStatus(_ storage: StorageKind) async throws {
        let clock = TestClock()
        try await withServer(storage, clock: clock) { s in
            try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"iphone","name":"Alice iPhone"}"#)

            // 400: strict bodies, names, malformed and oversized input, bad parameters
            var r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"ipad","name":"Alice iPad","color":"red"}"#)
            #expect(r.status == 400 && r.error == "invalid_event" && r["field"] == .string("color"))
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"ipad","name":"Alice iPad","platform":null}"#)
            #expect(r.status == 400 && r["field"] == .string("platform"))
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"name":"Alice iPad"}"#)
            #expect(r.status == 400 && r["field"] == .string("deviceId"))
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"ipad","name":"Alice iPad","kind":"phone"}"#)
            #expect(r.status == 400 && r["field"] == .string("kind"))
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"ipad","name":7}"#)
            #expect(r.status == 400 && r["field"] == .string("name"))
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"\#(String(repeating: "d", count: 129))","name":"Alice iPad","via":"admin"}"#)
            #expect(r.status == 400 && r.error == "invalid_event" && r["field"] == .string("deviceId"))
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"ipad","name":"ab","via":"admin"}"#)
            #expect(r.status == 400 && r.error == "invalid_name" && r["field"] == .string("name"))
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"ipad","#)
            #expect(r.status == 400 && r.error == "invalid_event")
            r = try await s.call(.POST, "/v1/users/alice/devices", body: "[1,2]")
            #expect(r.status == 400 && r.error == "invalid_event")
            r = try await s.call(.POST, "/v1/users/alice/challenges", body: #"{"requestingDeviceId":"x","context":{"ip":"\#(String(repeating: "1", count: 70_000))"}}"#)
            #expect(r.status == 400 && r.error == "payload_too_large")
            r = try await s.call(.GET, "/v1/users/alice/devices?at=abc", token: "reader-token")
            #expect(r.status == 400 && r["field"] == .string("at"))
            r = try await s.call(.GET, "/v1/users/alice/devices?asOf=yesterday", token: "reader-token")
            #expect(r.status == 400 && r["field"] == .string("asOf"))
            r = try await s.call(.GET, "/v1/users/%24system/devices", token: "reader-token")
            #expect(r.status == 400 && r["field"] == .string("user"))
            r = try await s.call(.POST, "/v1/users/alice/devices/iphone/access", body: #"{"actor":"root"}"#)
            #expect(r.status == 400 && r["field"] == .string("actor"))
            r = try await s.call(.PUT, "/v1/policy", body: #"{"coolingSeconds":-1}"#)
            #expect(r.status == 400 && r["field"] == .string("coolingSeconds"))

            // 404: unknown device, challenge, OTP, route, subscription
            r = try await s.call(.PATCH, "/v1/users/alice/devices/ghost", body: #"{"name":"Ghost device"}"#)
            #expect(r.status == 404 && r.error == "device_not_found")
            r = try await s.call(.GET, "/v1/users/alice/challenges/nope", token: "reader-token")
            #expect(r.status == 404 && r.error == "challenge_not_found")
            r = try await s.call(.POST, "/v1/users/alice/challenges/nope/approve", body: #"{"deviceId":"iphone"}"#)
            #expect(r.status == 404 && r.error == "challenge_not_found")
            r = try await s.call(.POST, "/v1/users/alice/otps/nope/verify", body: #"{"code":"123456"}"#)
            #expect(r.status == 404 && r.error == "otp_not_found")
            r = try await s.call(.GET, "/v1/nothing-here", token: "reader-token")
            #expect(r.status == 404 && r.error == "not_found")
            r = try await s.call(.PATCH, "/v1/users/alice/cooling", token: "reader-token", body: "{}")
            #expect(r.status == 405 && r.headers.first(name: "Allow") == "GET")
            r = try await s.call(.GET, "/v1/subscriptions/nobody", token: "reader-token")
            #expect(r.status == 404 && r.error == "not_found")

            // 409: rule refusals (existence, proof) rank before cooling
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"iphone","name":"Alice iPhone","via":"admin"}"#)
            #expect(r.status == 409 && r.error == "device_exists")
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"ipad","name":"Alice iPad"}"#)
            #expect(r.status == 409 && r.error == "verification_required")
            r = try await s.call(.PATCH, "/v1/users/alice/devices/iphone", body: #"{"name":"Alice iPhone"}"#)
            #expect(r.status == 409 && r.error == "name_unchanged")

            // 423: cooling, with until
            r = try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"ipad","name":"Alice iPad","via":"admin"}"#)
            #expect(r.status == 201)
            r = try await s.call(.DELETE, "/v1/users/alice/devices/ipad")
            #expect(r.status == 423 && r.error == "cooling_period_active")
            #expect(r["until"] == .string(clock.now.adding(seconds: 300).formatted))
            #expect(r.headers.first(name: "Retry-After") == "300")

            // 429: OTP rate limit
            try await s.call(.PUT, "/v1/policy", body: #"{"otpPerHour":1}"#)
            r = try await s.call(.POST, "/v1/users/alice/otps", body: #"{"channel":"sms","target":"+15551234567"}"#)
            #expect(r.status == 201)
            r = try await s.call(.POST, "/v1/users/alice/otps", body: #"{"channel":"sms","target":"+15551234567"}"#)
            #expect(r.status == 429 && r.error == "otp_rate_limited")

            // Nothing refused was appended
            r = try await s.call(.GET, "/v1/users/alice/history", token: "reader-token")
            #expect(r.json?.arrayValue?.map { $0["type"]?.stringValue ?? "" } == ["device.registered", "device.registered", "otp.issued"])
        }
    }
}

/// The HTTP methods of the tests, convertible to async-http-client's.
enum HTTPMethodName {
    case GET, POST, PUT, PATCH, DELETE
}

import NIOHTTP1

extension HTTPMethodName {
    var nio: HTTPMethod {
        switch self {
        case .GET: .GET
        case .POST: .POST
        case .PUT: .PUT
        case .PATCH: .PATCH
        case .DELETE: .DELETE
        }
    }
}
