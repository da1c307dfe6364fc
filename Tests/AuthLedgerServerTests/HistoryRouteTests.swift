import AuthLedger
import Foundation
import AuthLedgerTestSupport
import Testing

/// `GET /v1/users/{u}/history?after=&limit=` (SPEC 3): pages, their `Link`, and range checks.
@Suite(.timeLimit(.minutes(2))) struct HistoryRouteTests {
    @Test(arguments: StorageKind.all) func historyPagesFollowTheirLinksToTheEnd(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            // Given alice with 7 events, interleaved with bob's
            var events = [Fixture.registered("alice", "phone"), Fixture.registered("bob", "phone")]
            for k in 1...6 { events += [Fixture.accessed("alice", "phone", second: k), Fixture.accessed("bob", "phone", second: k)] }
            let r = try await s.call(.POST, "/v1/events", body: Fixture.array(events))
            #expect(r.status == 200 || r.status == 201, "\(r.body)")
            let whole = try await s.call(.GET, "/v1/users/alice/history", token: "reader-token")
            let all = try #require(whole.json?.arrayValue)
            #expect(all.count == 7)
            #expect(whole.headers["Link"].isEmpty)
            // When it is read 3 at a time, following each Link
            var path: String? = "/v1/users/alice/history?limit=3"
            var pages: [[JSON]] = []
            while let p = path {
                let page = try await s.call(.GET, p, token: "reader-token")
                #expect(page.status == 200, "\(page.body)")
                pages.append(try #require(page.json?.arrayValue))
                path = page.headers["Link"].first.map { link in
                    String(link.drop { $0 != "<" }.dropFirst().prefix { $0 != ">" })
                }
                #expect(pages.count <= 4)
                if pages.count > 4 { break }
            }
            // Then the pages are 3, 3, 1 events and together the whole history
            #expect(pages.map(\.count) == [3, 3, 1])
            #expect(pages.flatMap { $0 } == all)
            // And after a seq in the middle, the page starts right after it
            let lastSeq = all[3]["seq"]!.intValue!
            let rest = try await s.call(.GET, "/v1/users/alice/history?after=\(lastSeq)", token: "reader-token")
            #expect(rest.json?.arrayValue == Array(all[4...]))
            // And the other query options still apply
            let upTo = try await s.call(.GET, "/v1/users/alice/history?at=\(lastSeq)&limit=2&after=1", token: "reader-token")
            #expect(upTo.json?.arrayValue == Array(all[1...2]))
        }
    }

    @Test(arguments: ["after=-1", "after=x", "after=9223372036854775808", "after=18446744073709551616",
                      "limit=0", "limit=-5", "limit=10001", "limit=1.5", "limit=99999999999999999999"])
    func outOfRangePagingIs400(_ query: String) async throws {
        try await withServer { s in
            let r = try await s.call(.GET, "/v1/users/alice/history?\(query)", token: "reader-token")
            #expect(r.status == 400, "\(query): \(r.body)")
            #expect(r.error == "invalid_event")
            #expect(r["field"]?.stringValue == String(query.prefix { $0 != "=" }))
        }
    }
}
