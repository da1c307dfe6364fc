import AuthLedgerCore
import Testing

/// How an OTP's delivery target is masked before it is recorded, and which targets are refused.
@Suite struct OTPTargetTests {
    @Test(arguments: [
        ("alice@example.com", "a***@example.com"),
        ("  alice@example.com\t", "a***@example.com"),
        // A combining mark right after the "@" (one character with it) does not hide it
        ("»66\u{1F3FB}@\u{FB1E}x.y", "»***@\u{FB1E}x.y"),
    ])
    func anEmailKeepsItsFirstCharacterAndItsDomain(_ target: String, _ masked: String) throws {
        #expect(try OTPSecrets.mask(target, channel: "email") == masked)
    }

    @Test(arguments: ["not-an-address", "@example.com", "alice@", "   ", "a\u{1}@example.com"])
    func anEmailWithoutALocalPartAndADomainIsRefused(_ target: String) {
        #expect(throws: LedgerError.self) { try OTPSecrets.mask(target, channel: "email") }
    }
}
