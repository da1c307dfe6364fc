import AuthLedger
import Foundation
import AuthLedgerTestSupport
import Testing

/// Given a recorded scenario (Fixtures/scenarios/*.jsonl), when it is imported and queried
/// at the positions and times of its `.expect.jsonl`, then every answer is the one derived
/// by hand from the SPEC — from maintained projections and from a replay from scratch alike.
@Suite struct ScenarioFixtureTests {
    static let scenarios = ["01-first-device-email-link", "02-trusted-device-approval", "03-device-management-cooling",
                            "04-push-enrollment", "05-otp-reregistration"]

    struct Expectation {
        var line: Int
        var query: String
        var user: String
        var options: QueryOptions
        var id: String?
        var exact: Bool
        var expected: JSON
    }

    static func load(_ name: String) throws -> (events: [EventInput], expectations: [Expectation]) {
        let events = try EventDecoder.decodeLines(Array(try Data(contentsOf: Support.fixture("scenarios/\(name).jsonl"))), file: name).map(\.input)
        let text = try String(contentsOf: Support.fixture("scenarios/\(name).expect.jsonl"), encoding: .utf8)
        var out: [Expectation] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let l = raw.trimmingCharacters(in: .whitespaces)
            if l.isEmpty || l.hasPrefix("#") { continue }
            let j = try JSON.parse(l)
            let options = QueryOptions(position: j["position"]?.intValue.map(UInt64.init), asOf: t(j["asOf"]!.stringValue!),
                                       current: j["current"]?.stringValue, includeRevoked: j["includeRevoked"]?.boolValue ?? false,
                                       asRequester: j["asRequester"]?.boolValue ?? false)
            out.append(Expectation(line: i + 1, query: j["query"]!.stringValue!, user: j["user"]!.stringValue!, options: options,
                                   id: j["id"]?.stringValue, exact: j["exact"]?.boolValue ?? false, expected: j["expected"]!))
        }
        return (events, out)
    }

    static func answer(_ ledger: Ledger, _ e: Expectation, fromScratch: Bool) async throws -> JSON {
        var o = e.options
        o.fromScratch = fromScratch
        switch e.query {
        case "devices": return try await ledger.devices(of: e.user, o).json
        case "cooling": return try await ledger.cooling(of: e.user, o).json
        case "pending": return try await ledger.pending(of: e.user, o).json
        case "challenge": return try await ledger.challenge(e.id!, of: e.user, o).json
        case "history": return .array(try await ledger.history(e.user, o).map(\.json))
        default: throw LedgerError.invalid("unknown query \(e.query)")
        }
    }

    @Test(arguments: scenarios, StorageKind.all)
    func answersMatchTheHandDerivedExpectations(_ name: String, _ storage: StorageKind) async throws {
        // Given the scenario imported into a fresh store
        let (events, expectations) = try Self.load(name)
        let ledger = try await storage.freshLedger()
        let outcome = try await ledger.append(events)
        #expect(outcome.appended.count == events.count)
        #expect(expectations.count >= 4, "a scenario is checked at several positions and times")
        for e in expectations {
            // When queried from maintained projections and from scratch
            for fromScratch in [false, true] {
                let actual = try await Self.answer(ledger, e, fromScratch: fromScratch)
                // Then the answer is the expected one
                if e.exact {
                    #expect(actual == e.expected, "\(name).expect.jsonl line \(e.line) (fromScratch \(fromScratch)): \(actual.serialized())")
                } else {
                    let m = mismatch(e.expected, actual)
                    #expect(m == nil, "\(name).expect.jsonl line \(e.line) (fromScratch \(fromScratch)): \(m ?? "")")
                }
            }
        }
    }

    @Test(arguments: scenarios, StorageKind.all)
    func reimportingTheScenarioIsANoOpAndTheExportIsStable(_ name: String, _ storage: StorageKind) async throws {
        // Given the scenario imported (its events carry explicit ids)
        let (events, _) = try Self.load(name)
        let a = try await storage.freshLedger(), b = try await storage.freshLedger()
        _ = try await a.append(events)
        _ = try await b.append(events)
        // When it is imported again
        let again = try await a.append(events)
        // Then every event is a skipped duplicate, and two stores export the same events
        // (with their own salts: personal values get fresh ones in each store, SPEC 1.5)
        #expect(again.appended.isEmpty)
        #expect(again.duplicates == events.count)
        await #expect(try a.contentText() == b.contentText())
        #expect(try await a.verify().seq == UInt64(events.count))
    }
}
