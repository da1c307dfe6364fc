import AuthLedger
@testable import AuthLedgerServer
import AuthLedgerTestSupport
import Foundation
import Testing

/// `GET /v1/users` (reference 5.1): given users appended over HTTP, when the list is asked
/// for by prefix and pages, then it answers them by key with their counts and latest
/// events, links the next page, needs the read scope, and refuses bad parameters with 400
/// naming the parameter.
@Suite(.timeLimit(.minutes(2))) struct UsersRouteTests {
    @Test(arguments: StorageKind.all) func usersArePagedByPrefixOverHTTP(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            let users = ["alice", "bob", "bob+1", "bob/2", "bobby", "carol"]
            let events = users.map { Fixture.registered($0, "phone") } + [Fixture.accessed("bob", "phone", second: 30)]
            #expect(try await s.call(.POST, "/v1/events", token: "importer-token", body: Fixture.array(events)).status == 201)
            // All of them, by key, each with its count and latest event
            var r = try await s.call(.GET, "/v1/users", token: "reader-token")
            #expect(r.status == 200, "\(r.body)")
            #expect(r["users"]?.arrayValue?.map { $0["user"]?.stringValue } == users)
            let bob = try #require(r["users"]?.arrayValue?[1])
            #expect(bob == .object([("user", .string("bob")), ("events", .int(2)), ("lastSeq", .int(7)), ("lastAt", .string("2026-03-01T08:00:30.000Z"))]))
            #expect(r["position"] == .int(7) && r["next"] == .null)
            #expect(r.headers["Link"].isEmpty)
            // A prefix with characters a URL escapes, in pages of 2 linked by `next` and Link
            r = try await s.call(.GET, "/v1/users?prefix=bob&limit=2", token: "reader-token")
            #expect(r["users"]?.arrayValue?.map { $0["user"]?.stringValue } == ["bob", "bob+1"])
            #expect(r["next"] == .string("bob+1"))
            let link = try #require(r.headers["Link"].first)
            #expect(link == #"</v1/users?prefix=bob&after=bob%2B1&limit=2>; rel="next""#, "\(link)")
            let next = String(link.dropFirst().prefix { $0 != ">" })
            r = try await s.call(.GET, next, token: "reader-token")
            #expect(r["users"]?.arrayValue?.map { $0["user"]?.stringValue } == ["bob/2", "bobby"])
            #expect(r["next"] == .null)
            r = try await s.call(.GET, "/v1/users?prefix=bob%2F", token: "reader-token")
            #expect(r["users"]?.arrayValue?.map { $0["user"]?.stringValue } == ["bob/2"])
            // Empty parameters are the defaults
            r = try await s.call(.GET, "/v1/users?prefix=&after=", token: "reader-token")
            #expect(r["users"]?.arrayValue?.count == users.count)
        }
    }

    @Test func badParametersAre400NamingTheParameterAndTheScopeIsRead() async throws {
        try await withServer { s in
            for (query, field) in [("limit=0", "limit"), ("limit=abc", "limit"), ("limit=1001", "limit"), ("limit=-1", "limit"),
                                   ("prefix=a%01", "prefix"), ("after=%0A", "after"),
                                   ("after=" + String(repeating: "x", count: 129), "after"),
                                   ("prefix=" + String(repeating: "x", count: 129), "prefix")] {
                let r = try await s.call(.GET, "/v1/users?" + query, token: "reader-token")
                #expect(r.status == 400 && r.error == "invalid_event" && r["field"] == .string(field), "\(query): \(r.status) \(r.body)")
            }
            #expect(try await s.call(.GET, "/v1/users", token: nil).status == 401)
            #expect(try await s.call(.GET, "/v1/users", token: "writer-token").status == 403)
            #expect(try await s.call(.GET, "/v1/users?limit=1000", token: "reader-token").status == 200)
        }
    }
}
