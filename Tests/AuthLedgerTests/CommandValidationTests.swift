import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

@Suite struct CommandValidationTests {
    /// A command appends only what `import` would accept, so every export re-imports.
    @Test(arguments: StorageKind.all) func commandFieldsGetTheImportChecks(_ storage: StorageKind) async throws {
        let (ledger, dir) = try FeedFixture.temporaryLedger(storage)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let at: @Sendable () -> Timestamp = { Timestamp(rfc3339: "2026-03-01T09:00:00Z")! }
        func code(_ c: @autoclosure () throws -> Command) async -> ErrorCode? {
            do { _ = try await ledger.perform(c(), clock: at); return nil } catch let e as LedgerError { return e.code } catch { return nil }
        }
        // Given an empty platform, a control character in a context value, an over-long push token
        await #expect(code(try .register(user: "u", deviceId: "d1", name: "Phone one", kind: "mobile", platform: "", appId: nil,
                               pushToken: nil, binding: "permanent", via: nil, grantId: nil, challengeId: nil)) == .invalidEvent)
        await #expect(code(.issueChallenge(user: "u", requestingDeviceId: "x", action: "login", context: StringMap([("ip", "a\u{1}b")]))) == .invalidEvent)
        await #expect(code(try .register(user: "u", deviceId: "d1", name: "Phone one", kind: "mobile", platform: nil, appId: nil,
                               pushToken: String(repeating: "t", count: 5000), binding: "permanent", via: nil, grantId: nil, challengeId: nil)) == .invalidEvent)
        // Then nothing was appended; a valid command still is
        #expect(try await ledger.head().seq == 0)
        await #expect(code(try .register(user: "u", deviceId: "d1", name: "Phone one", kind: "mobile", platform: "ios", appId: nil,
                               pushToken: nil, binding: "permanent", via: nil, grantId: nil, challengeId: nil)) == nil)
        // And the export re-imports
        let lines = try await ledger.events(from: 1).map { Array($0.json.serialized().utf8) }
        for l in lines { _ = try EventDecoder.decode(line: l) }
    }
}
