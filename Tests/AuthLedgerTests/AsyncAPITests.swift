@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import Testing

/// The API is async: appends and commands join the group commit rather than a transaction
/// of their own; `close()` waits for the writer.
@Suite struct AsyncAPITests {
    static let at = t("2026-03-01T09:00:00Z")

    static func register(_ user: String) throws -> [EventInput] {
        try inputs(line("device.registered", user: user, at: "2026-03-01T09:00:00Z",
                        data: #"{"deviceId":"phone","name":"Phone","kind":"mobile","binding":"permanent","via":"initial"}"#))
    }

    @Test func appendsAndCommandsJoinTheGroupCommit() async throws {
        let ledger = try await Ledger(lmdb: Support.tempDir("async-api"))
        let before = ledger.writerStats.requests
        _ = try await ledger.append(try Self.register("alice"))
        _ = try await ledger.perform(.access(user: "alice", deviceId: "phone"), clock: { Self.at })
        // Both went through the group-commit queue as requests (a transaction of their own would
        // not count one). The writer counts a batch just after answering it: wait for the count.
        let deadline = Date().addingTimeInterval(10)
        while ledger.writerStats.requests < before + 2 && Date() < deadline { usleep(1000) }
        #expect(ledger.writerStats.requests == before + 2)
        #expect(try await ledger.head().seq == 2)
    }

    @Test func theAsyncWritesEraseReplayAndExpire() async throws {
        let ledger = try await Ledger(lmdb: Support.tempDir("async-api"))
        _ = try await ledger.append(try Self.register("alice"))
        let c = try await ledger.perform(.issueChallenge(user: "alice", requestingDeviceId: "tablet", action: "login", context: nil),
                                         clock: { Self.at })
        let expired = try await ledger.expireDueChallenges(now: Self.at.adding(seconds: 3600))
        #expect(expired.map(\.event.type) == [.challengeExpired])
        #expect(expired.first?.event.data.string(.challengeId) == c.challengeId)
        #expect(try await ledger.replay() == 3)
        let erased = try await ledger.erase("alice", now: Self.at.adding(seconds: 7200))
        #expect(erased.event.event.type == .userErased && erased.erasedEvents == 1)
        #expect(try await ledger.verify().seq == 4)
    }

    @Test func closeFinishesTheQueuedWritesAndRefusesLaterOnes() async throws {
        let ledger = try await Ledger(lmdb: Support.tempDir("async-api"))
        // Many appends queued at once, then close: every one that was queued is durable.
        let users = (0..<50).map { "user\($0)" }
        let outcomes = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for u in users { group.addTask { try await ledger.append(try Self.register(u)).head.seq } }
            var seqs: [UInt64] = []
            for try await s in group { seqs.append(s) }
            return seqs
        }
        await ledger.close()
        #expect(outcomes.count == users.count)
        #expect(try await ledger.head().seq == UInt64(users.count))
        await #expect(throws: LedgerError.self) { try await ledger.append(try Self.register("late")) }
        #expect(try await ledger.head().seq == UInt64(users.count))
    }
}
