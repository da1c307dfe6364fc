import AuthLedger
import Foundation
import AuthLedgerTestSupport
import Testing

/// Given a refused fixture (Fixtures/refused/rules/*.jsonl: a valid prefix, then one event
/// that breaks a SPEC §2 rule), when it is imported, then the import is refused with the
/// manifest's code naming the manifest's line, and nothing is appended.
@Suite struct RefusedFixtureTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var file: String
        var code: String
        var line: Int
        /// The refusal's `until`, where the manifest states it (RFC 3339, as answers write it).
        var until: String?
        var testDescription: String { "\(file) → \(code) line \(line)" }
    }

    static let cases: [Case] = {
        guard let data = try? Data(contentsOf: Support.fixture("refused/rules/manifest.json")),
              let manifest = try? JSON.parse(Array(data)).arrayValue else { return [] }
        return manifest.map { Case(file: $0["file"]!.stringValue!, code: $0["code"]!.stringValue!, line: Int($0["line"]!.intValue!),
                                   until: $0["until"]?.stringValue) }
    }()

    static func decoded(_ c: Case) throws -> [(input: EventInput, line: Int)] {
        let bytes = Array(try Data(contentsOf: Support.fixture("refused/rules/\(c.file)")))
        return try EventDecoder.decodeLines(bytes, file: c.file)
    }

    /// Where the append of `items` was refused: code and the input line (as `import` reports it).
    static func refusedAt(_ ledger: Ledger, _ items: [(input: EventInput, line: Int)]) async -> (code: String, line: Int?, until: String?) {
        guard let e = await refusal({ _ = try await ledger.append(items.map(\.input)) }) else { return ("none", nil, nil) }
        return (e.code.rawValue, e.index.map { items[$0].line }, e.until?.formatted)
    }

    @Test func theManifestCoversEveryRuleErrorCode() {
        let covered = Set(Self.cases.map(\.code))
        let ruleCodes: Set<String> = ["time_regression", "invalid_name", "device_exists", "device_revoked", "device_not_found",
            "name_unchanged", "verification_required", "grant_invalid", "device_limit_reached", "current_device_protected",
            "cooling_period_active", "challenge_exists", "challenge_not_found", "challenge_resolved", "challenge_expired",
            "challenge_not_expired", "approver_not_trusted", "otp_exists", "otp_rate_limited", "otp_not_found", "otp_expired",
            "otp_locked", "duplicate_event_id", "chain_mismatch", "invalid_event", "signature_invalid", "signature_required"]
        #expect(ruleCodes.subtracting(covered).isEmpty, "no refused fixture for \(ruleCodes.subtracting(covered).sorted())")
    }

    @Test(arguments: cases, StorageKind.all)
    func importIsRefusedWithTheCodeAndLine(_ c: Case, _ storage: StorageKind) async throws {
        // Given the fixture's decodable lines (decoding errors are refusals too)
        let items: [(input: EventInput, line: Int)]
        do {
            items = try Self.decoded(c)
        } catch let error as LedgerError {
            // Then a static refusal names the manifest's code and line
            #expect(error.code.rawValue == c.code)
            #expect(error.line == c.line)
            #expect(error.file == c.file)
            return
        }
        // When the whole file is imported into a fresh store
        let fresh = try await storage.freshLedger()
        let whole = await Self.refusedAt(fresh, items)
        // Then it is refused at the manifest's line with its code, and nothing is appended
        #expect(whole.code == c.code)
        #expect(whole.line == c.line)
        if let until = c.until { #expect(whole.until == until) }
        #expect(try await fresh.head().seq == 0)

        // Given a store holding the valid prefix
        let ledger = try await storage.freshLedger()
        let prefix = items.filter { $0.line < c.line }
        _ = try await ledger.append(prefix.map(\.input))
        let before = try await ledger.exportText()
        let headBefore = try await ledger.head()
        // When the refused rest is imported
        let rest = await Self.refusedAt(ledger, items.filter { $0.line >= c.line })
        // Then the same code and line, and the export is byte-identical
        #expect(rest.code == c.code)
        #expect(rest.line == c.line)
        if let until = c.until { #expect(rest.until == until) }
        await #expect(try ledger.exportText() == before)
        #expect(try await ledger.head() == headBefore)
        #expect(try await ledger.verify() == headBefore)
    }
}
