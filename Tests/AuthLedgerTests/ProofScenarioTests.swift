import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import Testing

/// The device-proof scenarios (Fixtures/scenarios/06–08, reference section 11), checked like
/// the others (``ScenarioFixtureTests``): every expected answer, from maintained projections
/// and from a replay, on both stores; re-import is a no-op; verify re-checks every signature.
@Suite struct ProofScenarioTests {
    static let scenarios = ["06-email-link-with-key", "07-signed-approval", "08-key-rotation"]

    @Test(arguments: scenarios, StorageKind.all)
    func answersMatchTheHandDerivedExpectations(_ name: String, _ storage: StorageKind) async throws {
        let (events, expectations) = try ScenarioFixtureTests.load(name)
        let ledger = try await storage.freshLedger()
        #expect(try await ledger.append(events).appended.count == events.count)
        #expect(expectations.count >= 4)
        for e in expectations {
            for fromScratch in [false, true] {
                let actual = try await ScenarioFixtureTests.answer(ledger, e, fromScratch: fromScratch)
                if e.exact {
                    #expect(actual == e.expected, "\(name).expect.jsonl line \(e.line) (fromScratch \(fromScratch)): \(actual.serialized())")
                } else {
                    let m = mismatch(e.expected, actual)
                    #expect(m == nil, "\(name).expect.jsonl line \(e.line) (fromScratch \(fromScratch)): \(m ?? "")")
                }
            }
        }
        // verify re-checks the chain, the indexes and every signature
        #expect(try await ledger.verify().seq == UInt64(events.count))
        let again = try await ledger.append(events)
        #expect(again.appended.isEmpty && again.duplicates == events.count)
    }
}
