import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

@Suite struct CommandValidationTests {
    /// A command appends only what `import` would accept, so every export re-imports.
    @Test(arguments: StorageKind.all) func commandFieldsGetTheImportChecks(_ storage: StorageKind) async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
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

    /// Each argument of each command that becomes an event field is checked once, up front,
    /// as `import` checks that field (issue 34 item 6: decided events are not re-parsed): a
    /// control character, an empty value or an over-long one in any of them, an out-of-range
    /// policy number, a map with a bad value, a bad `meta.actor` or `meta.caller` — each is
    /// `invalid_event` and nothing is appended; the same commands with good values append,
    /// and everything they appended re-imports.
    @Test(arguments: StorageKind.all) func everyArgumentIsCheckedAsItsEventField(_ storage: StorageKind) async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let at: @Sendable () -> Timestamp = { Timestamp(rfc3339: "2026-03-01T09:00:00Z")! }
        func code(_ c: Command, meta: StringMap? = nil) async -> ErrorCode? {
            do { _ = try await ledger.perform(c, meta: meta, clock: at); return nil } catch let e as LedgerError { return e.code } catch { return nil }
        }
        let key = StringMap([("kty", "OKP"), ("crv", "Ed25519"), ("x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")])
        // Each command with one text argument set to `v`.
        let withText: [(String, (String) -> Command)] = [
            ("requestVerification.platform", { .requestVerification(VerificationRequest(user: "u", deviceId: "d9", platform: $0)) }),
            ("register.platform", { .register(Registration(user: "u", deviceId: "d9", name: "Phone nine", platform: $0)) }),
            ("register.appId", { .register(Registration(user: "u", deviceId: "d9", name: "Phone nine", appId: $0)) }),
            ("register.pushToken", { .register(Registration(user: "u", deviceId: "d9", name: "Phone nine", pushToken: $0)) }),
            ("register.deviceId", { .register(Registration(user: "u", deviceId: $0, name: "Phone nine")) }),
            ("revoke.reason", { .revoke(Revocation(user: "u", deviceId: "d1", reason: $0)) }),
            ("revokeAll.reason", { .revokeAll(RevocationOfAll(user: "u", reason: $0)) }),
            ("updatePushToken.pushToken", { .updatePushToken(PushTokenUpdate(user: "u", deviceId: "d1", pushToken: $0)) }),
            ("issueChallenge.action", { .issueChallenge(ChallengeRequest(user: "u", requestingDeviceId: "d1", action: $0)) }),
            ("issueChallenge.context", { .issueChallenge(ChallengeRequest(user: "u", requestingDeviceId: "d1", context: StringMap([("ip", $0)]))) }),
            ("approve.signature", { .approve(Approval(user: "u", challengeId: "c1", deviceId: "d1", signature: $0)) }),
            ("deny.signature", { .deny(Denial(user: "u", challengeId: "c1", deviceId: "d1", signature: $0)) }),
            ("rotateKey.signature", { .rotateKey(KeyRotation(user: "u", deviceId: "d1", publicKey: key, signature: $0)) }),
            ("rotateKey.publicKey", { .rotateKey(KeyRotation(user: "u", deviceId: "d1", publicKey: StringMap([("kty", $0)]), signature: "s.s.s")) }),
            ("redeemLink.platform", { .redeemLink(LinkRedemption(user: "u", linkHash: String(repeating: "a", count: 64), platform: $0)) }),
            ("redeemLink.pushToken", { .redeemLink(LinkRedemption(user: "u", linkHash: String(repeating: "a", count: 64), pushToken: $0)) }),
        ]
        for (name, make) in withText {
            // (An empty value in a map is a value import accepts.)
            for bad in ["a\u{1}b", String(repeating: "x", count: 5000)] + (name.hasSuffix("context") ? [] : [""]) {
                await #expect(code(make(bad)) == .invalidEvent, "\(name) = \(bad.prefix(8).debugDescription)")
            }
        }
        for bad in [PolicySet(coolingSeconds: -1), PolicySet(otpMaxAttempts: 0), PolicySet(maxDevices: 1_000_000_000_000)] {
            await #expect(code(.setPolicy(bad)) == .invalidEvent, "\(bad)")
        }
        await #expect(code(.access(Access(user: "u", deviceId: "d1")), meta: StringMap([("actor", "robot")])) == .invalidEvent)
        await #expect(code(.access(Access(user: "u", deviceId: "d1")), meta: StringMap([("caller", "x")])) == .invalidEvent)
        await #expect(code(.access(Access(user: "u", deviceId: "d1")), meta: StringMap([("requestId", "a\u{7}")])) == .invalidEvent)
        #expect(try await ledger.head().seq == 0)
        // Good values append, and the export re-imports.
        await #expect(code(.register(Registration(user: "u", deviceId: "d1", name: "Phone one", platform: "ios", appId: "app", pushToken: "t")),
                           meta: StringMap([("actor", "service:auth"), ("caller", "token:ci"), ("requestId", "r-1")])) == nil)
        await #expect(code(.issueChallenge(ChallengeRequest(user: "u", requestingDeviceId: "d2", action: "login", context: StringMap([("ip", "203.0.113.7")])))) == nil)
        await #expect(code(.revoke(Revocation(user: "u", deviceId: "d1", reason: "lost"))) == nil)
        await #expect(code(.setPolicy(PolicySet(coolingSeconds: 60, maxDevices: 5))) == nil)
        let lines = try await ledger.events(from: 1).map { Array($0.json.serialized().utf8) }
        #expect(lines.count >= 4)
        for l in lines { _ = try EventDecoder.decode(line: l) }
    }
}
