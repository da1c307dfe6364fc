import AuthLedger
import Foundation
import AuthLedgerTestSupport
import Testing

/// `history(user)` in pages (SPEC 3): `after` a seq, at most `limit` events.
@Suite struct HistoryPageTests {
    /// alice and bob interleaved: alice's events are at the odd seqs 1, 3, 5, …
    static func ledger(_ n: Int, _ storage: StorageKind = .lmdb) async throws -> Ledger {
        let ledger = try await storage.freshLedger()
        var lines: [String] = []
        for k in 0..<n {
            for user in ["alice", "bob"] {
                let at = t("2026-03-01T09:00:00Z").adding(seconds: Int64(k)).formatted
                lines.append(k == 0
                    ? line("device.registered", user: user, at: at, data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)
                    : line("device.accessed", user: user, at: at, data: #"{"deviceId":"phone"}"#))
            }
        }
        try await ledger.importText(lines.joined(separator: "\n"))
        return ledger
    }

    @Test(arguments: StorageKind.all) func pagesAfterEachOthersLastSeqMakeTheWholeHistory(_ storage: StorageKind) async throws {
        // Given a user with 100 events, interleaved with another's
        let ledger = try await Self.ledger(100, storage)
        let o = QueryOptions(asOf: t("2026-04-01T00:00:00Z"))
        let all = try await ledger.history("alice", o)
        #expect(all.count == 100)
        for limit in [1, 7, 100, 500] {
            // When it is read in pages, each after the last seq of the previous one
            var pages: [[RecordedEvent]] = []
            var after: UInt64 = 0
            while pages.count <= 100 {
                let page = try await ledger.history("alice", o, page: HistoryPage(after: after, limit: limit))
                pages.append(page)
                guard page.count == limit, let last = page.last else { break }
                after = last.seq
            }
            // Then every page but the last is full and together they are the history, in order
            #expect(pages.dropLast().allSatisfy { $0.count == limit })
            #expect(pages.flatMap { $0 } == all)
        }
    }

    @Test func afterAnySeqStartsAtTheNextEventOfTheUser() async throws {
        let ledger = try await Self.ledger(20)
        let o = QueryOptions(asOf: t("2026-04-01T00:00:00Z"))
        let all = try await ledger.history("alice", o)
        // after a seq of alice's, of bob's, before the first, past the last
        for after in [0, 1, 2, 3, 18, 37, 39, 40, 1000] as [UInt64] {
            let page = try await ledger.history("alice", o, page: HistoryPage(after: after))
            #expect(page == all.filter { $0.seq > after }, "after \(after)")
        }
        // And position and as-of still bound the page
        var upTo = o
        upTo.position = 9
        #expect(try await ledger.history("alice", upTo, page: HistoryPage(after: 2, limit: 10)).map(\.seq) == [3, 5, 7, 9])
        upTo = QueryOptions(asOf: t("2026-03-01T09:00:02Z"))
        #expect(try await ledger.history("alice", upTo, page: HistoryPage(after: 1)).map(\.seq) == [3, 5])
        #expect(try await ledger.history("nobody", o, page: HistoryPage(after: 3, limit: 2)).isEmpty)
    }

    @Test func theCLIPagesWithAfterAndLimit() async throws {
        let store = Support.tempDir("authledger-cli") + "/store"
        let ledger = try await Self.ledger(5)
        let export = try await ledger.exportText()
        #expect(try CLI.run(["import", "-", "--store", store], stdin: export).status == 0)
        let page = try CLI.run(["history", "alice", "--after", "3", "--limit", "2", "--json", "--store", store, "--now", "2026-04-01T00:00:00Z"])
        #expect(page.json?.arrayValue?.map { $0["seq"]! } == [.int(5), .int(7)])
        let all = try CLI.run(["history", "alice", "--after", "3", "--store", store, "--now", "2026-04-01T00:00:00Z"])
        #expect(all.stdout.split(separator: "\n").count == 3)
        for bad in [["--limit", "0"], ["--after", "-1"], ["--after", "9223372036854775808"]] {
            let r = try CLI.run(["history", "alice"] + bad + ["--store", store])
            #expect(r.status == 2, "\(bad): \(r.stderr)")
        }
    }
}
