import AuthLedger
import AuthLedgerCore
import AuthLedgerTestSupport
import Foundation
import Testing

/// The list of users (reference section 3.6): given users whose keys share prefixes, with a
/// policy stream beside them, when pages are asked for by prefix, `after` and `limit`, then
/// each page holds the users in the order of their keys' UTF-8 bytes with their event counts
/// and latest events, and the pages together hold every user once.
@Suite struct UserListTests {
    static let keys = ["alice", "bob", "bobby", "carol", "dave", "Zed", "émile", "bob smith"]

    /// The users of `keys`: user k has k + 1 events, each at its own minute; a policy first.
    static func populated(_ storage: StorageKind) async throws -> Ledger {
        let ledger = try await storage.open(storage.freshStore(), keys: Support.tempDir())
        var lines = [line("policy.set", user: nil, at: "2026-05-01T08:00:00Z", data: #"{"coolingSeconds":0}"#)]
        for (k, user) in keys.enumerated() {
            lines.append(line("device.registered", user: user, at: "2026-05-01T09:00:00Z",
                              data: #"{"deviceId":"d","name":"Phone","kind":"mobile","binding":"permanent","via":"initial"}"#))
            for i in 0..<k {
                lines.append(line("device.accessed", user: user, at: "2026-05-01T09:\(String(format: "%02d", i + 1)):00Z", data: #"{"deviceId":"d"}"#))
            }
        }
        _ = try await ledger.append(try inputs(lines.joined(separator: "\n")))
        return ledger
    }

    /// Every page of `prefix` with `limit`, following `next`.
    static func allPages(_ ledger: Ledger, prefix: String = "", limit: Int) async throws -> [[String]] {
        var pages: [[String]] = []
        var after: String?
        repeat {
            let list = try await ledger.users(try UserPage(prefix: prefix, after: after, limit: limit))
            pages.append(list.users.map(\.user))
            after = list.next
        } while after != nil
        return pages
    }

    @Test(arguments: StorageKind.all) func usersComeByKeyBytesWithTheirCountsAndLatestEvents(_ storage: StorageKind) async throws {
        let ledger = try await Self.populated(storage)
        let list = try await ledger.users(try UserPage())
        // By UTF-8 bytes: upper case before lower case, a space before letters, é after z; no $system
        #expect(list.users.map(\.user) == ["Zed", "alice", "bob", "bob smith", "bobby", "carol", "dave", "émile"])
        #expect(list.next == nil)
        let head = try await ledger.head().seq
        #expect(list.position == head)
        // Each with its number of events and its latest event's seq and time (checked against history)
        for u in list.users {
            let events = try await ledger.history(u.user, QueryOptions(asOf: Timestamp(rfc3339: "2030-01-01T00:00:00Z")!))
            #expect(u.events == UInt64(events.count), "\(u.user)")
            #expect(u.lastSeq == events.last?.seq, "\(u.user)")
            #expect(u.lastAt == events.last?.event.at, "\(u.user)")
        }
        #expect(list.users.first { $0.user == "émile" }?.events == 7)
        #expect(list.json["users"]?.arrayValue?.first == .object([("user", .string("Zed")), ("events", .int(6)),
                                                                   ("lastSeq", .int(Int64(list.users[0].lastSeq))),
                                                                   ("lastAt", .string("2026-05-01T09:05:00.000Z"))]))
    }

    @Test(arguments: StorageKind.all) func prefixesAndPagesCoverEachUserOnce(_ storage: StorageKind) async throws {
        let ledger = try await Self.populated(storage)
        // A prefix: the users whose key starts with it, by bytes
        #expect(try await ledger.users(try UserPage(prefix: "bob")).users.map(\.user) == ["bob", "bob smith", "bobby"])
        #expect(try await ledger.users(try UserPage(prefix: "é")).users.map(\.user) == ["émile"])
        #expect(try await ledger.users(try UserPage(prefix: "nobody")).users.isEmpty)
        #expect(try await ledger.users(try UserPage(prefix: "$")).users.isEmpty)
        // Pages of 3, 2 and 1 hold every user once, in order; a full last page has no next
        let all = try await ledger.users(try UserPage()).users.map(\.user)
        for limit in [1, 2, 3, 8] {
            let pages = try await Self.allPages(ledger, limit: limit)
            #expect(pages.flatMap { $0 } == all, "limit \(limit)")
            #expect(pages.dropLast().allSatisfy { $0.count == limit })
            #expect(pages.count == (all.count + limit - 1) / limit, "limit \(limit)")
        }
        #expect(try await Self.allPages(ledger, prefix: "bob", limit: 2) == [["bob", "bob smith"], ["bobby"]])
        // `after` before the prefix starts at the prefix; after it, after it
        #expect(try await ledger.users(try UserPage(prefix: "c", after: "alice")).users.map(\.user) == ["carol"])
        #expect(try await ledger.users(try UserPage(prefix: "bob", after: "bob")).users.map(\.user) == ["bob smith", "bobby"])
        #expect(try await ledger.users(try UserPage(after: "dave")).users.map(\.user) == ["émile"])
        #expect(try await ledger.users(try UserPage(after: "not a user")).users.map(\.user) == ["émile"])
        // A new user appears in its place
        _ = try await ledger.append(try inputs(line("device.registered", user: "bobbie", at: "2026-05-01T10:00:00Z",
                                                    data: #"{"deviceId":"d","name":"Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)))
        #expect(try await ledger.users(try UserPage(prefix: "bob")).users.map(\.user) == ["bob", "bob smith", "bobbie", "bobby"])
    }

    @Test func badParametersAreInvalidEventNamingTheParameter() {
        func field(_ body: () throws -> UserPage) -> String? {
            do { _ = try body(); return nil } catch let error as LedgerError {
                return error.code == .invalidEvent ? error.field : "code \(error.code)"
            } catch { return "\(error)" }
        }
        #expect(field { try UserPage(limit: 0) } == "limit")
        #expect(field { try UserPage(limit: UserPage.maxLimit + 1) } == "limit")
        #expect(field { try UserPage(prefix: "a\u{1}") } == "prefix")
        #expect(field { try UserPage(prefix: String(repeating: "x", count: 129)) } == "prefix")
        #expect(field { try UserPage(after: "a\n") } == "after")
        #expect(field { try UserPage(after: String(repeating: "x", count: 129)) } == "after")
        #expect(field { try UserPage(prefix: String(repeating: "x", count: 128), after: "", limit: UserPage.maxLimit) } == nil)
    }

    @Test func theCLIListsPagesAndNamesTheNextOne() throws {
        let store = Support.tempDir("authledger-users") + "/store"
        for user in ["alice", "bob", "bob's"] {
            #expect(try CLI.run(["register", user, "phone", "--name", "Phone", "--store", store, "--now", "2026-05-01T10:00:00Z"]).status == 0)
        }
        // A page of two: a table and the next page's --after, quoted for a shell
        var r = try CLI.run(["users", "--limit", "2", "--store", store])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("USER") == true)
        #expect(lines.count == 4 && lines[1].hasPrefix("alice ") && lines[2].hasPrefix("bob "))
        #expect(lines.last == "more: --after 'bob'")
        // The next page in JSON
        r = try CLI.run(["users", "--after", "bob", "--json", "--store", store])
        let json = try JSON.parse(r.stdout)
        #expect(json["users"]?.arrayValue?.map { $0["user"]?.stringValue } == ["bob's"])
        #expect(json["next"] == .null)
        #expect(json["users"]?.arrayValue?.first?["lastSeq"] == .int(3))
        // A prefix
        r = try CLI.run(["users", "--prefix", "bob", "--json", "--store", store])
        #expect(try JSON.parse(r.stdout)["users"]?.arrayValue?.count == 2)
        // A bad limit is a usage error naming the option
        r = try CLI.run(["users", "--limit", "0", "--store", store])
        #expect(r.status == 2 && r.stderr.contains("--limit"), "\(r.stderr)")
    }
}
