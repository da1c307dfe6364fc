@testable import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

/// `forEachEvent`: the whole log (or one user's stream) in order, with personal values, on
/// both stores (PostgreSQL in runs: a run shorter than the log here).
@Suite(.serialized) struct ForEachEventTests {
    static func visited(_ ledger: Ledger, from: UInt64 = 1, user: String? = nil, through: UInt64 = .max,
                        stopAfter: Int = .max) async throws -> [RecordedEvent] {
        var out: [RecordedEvent] = []
        try await ledger.forEachEvent(from: from, user: user, through: through) { e in
            out.append(e)
            return out.count < stopAfter
        }
        return out
    }

    @Test(arguments: StorageKind.all) func itVisitsWhatTheQueriesAnswerInOrder(_ storage: StorageKind) async throws {
        let ledger = try await LedgerTests.allScenarios(storage)
        let all = try await ledger.events()
        #expect(all.count > 20)
        Ledger.replayRun = 7
        defer { Ledger.replayRun = 4096 }
        #expect(try await Self.visited(ledger) == all)
        #expect(try await Self.visited(ledger, from: 10, through: 18) == Array(all[9..<18]))
        #expect(try await Self.visited(ledger, from: 3, stopAfter: 9) == Array(all[2..<11]))
        #expect(try await Self.visited(ledger, from: UInt64(all.count) + 1).isEmpty)
        let user = try #require(all.compactMap(\.event.user).first)
        let ofUser = all.filter { $0.event.user == user }
        #expect(try await Self.visited(ledger, user: user) == ofUser)
        #expect(try await Self.visited(ledger, user: user, stopAfter: 1) == [ofUser[0]])
    }

    @Test(arguments: StorageKind.all) func aFailureOfTheVisitorIsThrownAndStopsTheWalk(_ storage: StorageKind) async throws {
        let ledger = try await LedgerTests.allScenarios(storage)
        Ledger.replayRun = 5
        defer { Ledger.replayRun = 4096 }
        var seen = 0
        let e = await refusal {
            try await ledger.forEachEvent { _ in
                seen += 1
                if seen == 8 { throw LedgerError(.invalidEvent, "stop here") }
                return true
            }
        }
        #expect(e?.message == "stop here")
        #expect(seen == 8)
    }
}
