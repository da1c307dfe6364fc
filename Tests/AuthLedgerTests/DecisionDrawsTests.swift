@testable import AuthLedger
import AuthLedgerCore
import Testing

/// The core draws no randomness of its own (issue 34, item 6): every random value of a
/// decision — the id, the link token, the challenge nonce, the OTP code — comes in with
/// `DecisionDraws`, so the same command, state and draws always decide the same events;
/// the log draws fresh ones per command.
@Suite struct DecisionDrawsTests {
    static let secrets = OTPSecrets(key: Array(repeating: 7, count: 32))
    static let now = Timestamp(milliseconds: 1_780_000_000_000)
    static let draws = DecisionDraws(id: "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000", linkToken: String(repeating: "A", count: 43),
                                     nonce: "bm9uY2Utbm9uY2Utbm9uYw", code: "042917")

    static func decide(_ c: Command, _ draws: DecisionDraws = Self.draws) throws -> Decision {
        try Decider.decide(c, state: UserState(user: "alice"), policy: Policy(), now: now, meta: nil, secrets: { secrets }, draws: draws)
    }

    @Test func aChallengeTakesItsIdAndNonceFromTheDraws() throws {
        let d = try Self.decide(.issueChallenge(ChallengeRequest(user: "alice", requestingDeviceId: "phone")))
        #expect(d.result.challengeId == Self.draws.id && d.result.nonce == Self.draws.nonce)
        guard case let .challengeIssued(p) = try #require(d.events.first).payload else { Issue.record("not challenge.issued"); return }
        #expect(p.challengeId == Self.draws.id && p.nonce == Self.draws.nonce)
        // The same inputs decide the same events.
        let again = try Self.decide(.issueChallenge(ChallengeRequest(user: "alice", requestingDeviceId: "phone")))
        #expect(try again.events.map { try $0.payload } == d.events.map { try $0.payload })
    }

    @Test func anOTPTakesItsIdAndCodeFromTheDraws() throws {
        let d = try Self.decide(.sendOTP(OTPRequest(user: "alice", channel: .email, target: "alice@example.com")))
        #expect(d.result.otpId == Self.draws.id && d.result.code == "042917")
        guard case let .otpIssued(p) = try #require(d.events.first).payload else { Issue.record("not otp.issued"); return }
        #expect(Self.secrets.matches(user: "alice", otpId: Self.draws.id, code: "042917", codeHash: p.codeHash))
        #expect(!Self.secrets.matches(user: "alice", otpId: Self.draws.id, code: "042918", codeHash: p.codeHash))
    }

    @Test func aVerificationRequestTakesItsIdAndTokenFromTheDraws() throws {
        let d = try Self.decide(.requestVerification(VerificationRequest(user: "alice", deviceId: "laptop", name: "Alice Laptop")))
        #expect(d.result.verificationId == Self.draws.id && d.result.token == Self.draws.linkToken)
        guard case let .verificationRequested(p) = try #require(d.events.first).payload else { Issue.record("not requested"); return }
        #expect(p.linkHash == LinkToken.hash(Self.draws.linkToken, secrets: Self.secrets))
    }

    @Test func theLogDrawsFreshWellFormedValues() {
        let a = DecisionDraws(), b = DecisionDraws()
        #expect(a.id != b.id && a.linkToken != b.linkToken && a.nonce != b.nonce)
        #expect(EventID(a.id) != nil && LinkToken.isWellFormed(a.linkToken))
        #expect(a.nonce.utf8.count == 22 && a.code.utf8.count == 6 && a.code.allSatisfy(\.isNumber))
        // Codes are uniform over six digits: 2,000 draws cover far more than a few values.
        #expect(Set((0..<2000).map { _ in OTPSecrets.newCode() }).count > 1500)
        // The same for a decision's code, drawn with its other values under one lock.
        let many = (0..<2000).map { _ in DecisionDraws() }
        #expect(Set(many.map(\.code)).count > 1500)
        #expect(Set(many.map(\.id)).count == 2000 && Set(many.map(\.linkToken)).count == 2000 && Set(many.map(\.nonce)).count == 2000)
    }
}
