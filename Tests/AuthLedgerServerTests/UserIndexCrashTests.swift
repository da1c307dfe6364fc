import AsyncHTTPClient
import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

/// The index log of user proofs through `kill -9` (reference section 14): an entry served
/// at `/users/checkpoint` was durable before it was served, so after the server is killed
/// mid-interval — events appended and not yet indexed — and started again on the same
/// store, the index log still holds it with the same root, and goes on from there.
@Suite(.timeLimit(.minutes(3))) struct UserIndexCrashTests {
    /// The index log's checkpoint as served: its size and base64 root (nil: no entry yet).
    static func served(_ base: String) async throws -> (size: UInt64, root: String)? {
        let r = try await TestServer.sharedClient.execute(
            TestServer.request(base: base, .GET, "/users/checkpoint", token: "auditor-token", body: nil, headers: []), timeout: .seconds(30))
        let text = String(buffer: try await r.body.collect(upTo: 1 << 20))
        guard r.status.code == 200 else { return nil }
        let lines = text.split(separator: "\n")
        guard lines.count >= 3, let size = UInt64(lines[1]) else { throw TestFailure("not a checkpoint: \(text)") }
        return (size, String(lines[2]))
    }

    static func append(_ base: String, users: Range<Int>) async throws {
        let body = Fixture.array(users.map { Fixture.registered("user\($0)", "phone") })
        let r = try await TestServer.sharedClient.execute(
            TestServer.request(base: base, .POST, "/v1/events", token: "importer-token", body: body, headers: []), timeout: .seconds(30))
        _ = try await r.body.collect(upTo: 1 << 20)
        try #require(r.status.code == 200 || r.status.code == 201)
    }

    @Test(arguments: StorageKind.all) func aKilledServerLosesNoServedIndexEntry(_ storage: StorageKind) async throws {
        let place = TestStore(storage)
        defer { place.remove() }
        let options = ["--index-interval", "0.1"]
        var (child, base) = try await ClientTests().serve(place, port: 0, options: options)
        defer { child.stop() }
        var served: [(size: UInt64, root: String)] = []
        var next = 0
        for _ in 0..<3 {
            // Appends while the index log grows; every checkpoint served is kept.
            let before = served.last?.size ?? 0
            for _ in 0..<200 {
                try await Self.append(base, users: next..<(next + 10))
                next += 10
                if let cp = try await Self.served(base) { served.append(cp) }
                if (served.last?.size ?? 0) >= before + 2 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect((served.last?.size ?? 0) >= before + 2, "the index log did not grow")
            // Events not yet indexed, then kill -9 mid-interval.
            try await Self.append(base, users: next..<(next + 10))
            next += 10
            if let cp = try await Self.served(base) { served.append(cp) }
            child.killHard()
            (child, base) = try await ClientTests().serve(place, port: 0, options: options)
            let now = try #require(try await Self.served(base))
            #expect(now.size >= served.last!.size, "the index log shrank from \(served.last!.size) to \(now.size) entries")
        }
        child.stop()
        // Every entry served is still there, at the same root; the index log is the log's.
        let ledger = try await place.open()
        for cp in served {
            let root = try await ledger.usersTreeHead(size: cp.size).root
            #expect(Data(root.bytes).base64EncodedString() == cp.root, "entry \(cp.size) has another root after the restarts")
        }
        let audit = try await ledger.auditUserIndex()
        #expect(audit.entries >= served.last!.size)
        await ledger.close()
    }
}
