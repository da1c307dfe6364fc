import AuthLedger
import Foundation
import Testing

/// Pipelined durable commit: a batch's commit syncs its data, and its callers are
/// answered once a later commit's sync or an explicit sync made its meta page durable.
@Suite struct PipelinedCommitTests {
    static func register(_ ledger: Ledger, _ user: String) async throws {
        _ = try await ledger.perform(.register(user: user, deviceId: "phone", name: "Phone of \(user)", kind: "mobile", platform: nil,
                                               appId: nil, pushToken: nil, binding: "permanent", via: nil, grantId: nil, challengeId: nil))
    }

    @Test func aLoneCommitIsAnsweredOnlyAfterAnExplicitSync() async throws {
        let ledger = try await Support.freshLedger()
        ledger.pipelinesCommits = true
        let before = ledger.writerStats
        // One request and nothing after it: no next commit syncs it, so the writer must.
        try await Self.register(ledger, "alice")
        let after = ledger.writerStats
        #expect(after.transactions - before.transactions == 1)
        #expect(after.idleSyncs - before.idleSyncs == 1)
        #expect(try await ledger.head().seq == 1)
    }

    @Test func withoutPipeliningNoExplicitSyncIsMade() async throws {
        let ledger = try await Support.freshLedger()
        ledger.pipelinesCommits = false
        try await Self.register(ledger, "alice")
        #expect(ledger.writerStats.idleSyncs == 0)
    }

    @Test func everyRequestOfABurstIsAnsweredAndRecordedInOrder() async throws {
        let ledger = try await Support.freshLedger()
        ledger.pipelinesCommits = true
        let users = (0..<8).map { "user\($0)" }
        for u in users { try await Self.register(ledger, u) }
        // 400 commands at once, some refused: each answered once, the refusals alone.
        let outcomes = await withTaskGroup(of: UInt64?.self) { group in
            for i in 0..<400 {
                group.addTask {
                    let device = i % 10 == 9 ? "ghost" : "phone"
                    return try? await ledger.perform(.access(user: users[i % users.count], deviceId: device)).events.first?.seq
                }
            }
            var out: [UInt64?] = []
            for await o in group { out.append(o) }
            return out
        }
        let acknowledged = outcomes.compactMap { $0 }
        #expect(acknowledged.count == 360)
        #expect(Set(acknowledged).count == 360)
        #expect(try await ledger.head().seq == 8 + 360)
        #expect(try await ledger.verify().seq == 8 + 360)
        let stats = ledger.writerStats
        // Every held batch was settled: by the next commit's sync or by an explicit one.
        #expect(stats.idleSyncs >= 1 && stats.idleSyncs <= stats.transactions)
    }
}
