import AuthLedger
import AuthLedgerTestSupport
import Testing

/// The accepted side of each refusal's boundary (the refused side is in Fixtures/refused/rules):
/// given a history that stays just inside a rule, when it is imported, then it is accepted.
@Suite struct RuleBoundaryTests {
    static let phone = line("device.registered", user: "u", at: "2026-04-01T10:00:00Z",
                            data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)
    static func ev(_ type: String, _ at: String, _ data: String, meta: String? = nil) -> String {
        line(type, user: "u", at: "2026-04-01T\(at)Z", data: data, meta: meta)
    }
    static let issue = ev("challenge.issued", "10:01:00", #"{"challengeId":"c1","action":"login","requestingDeviceId":"laptop","expiresAt":"2026-04-01T10:02:00Z"}"#)
    static let otp = ev("otp.issued", "10:01:00", #"{"otpId":"o1","channel":"sms","target":"*******89","codeHash":"\#(String(repeating: "cd", count: 32))","expiresAt":"2026-04-01T10:06:00Z","maxAttempts":2}"#)

    static let cases: [(String, [String])] = [
        ("equal times in a stream", [phone, ev("device.accessed", "10:00:00", #"{"deviceId":"phone"}"#)]),
        ("approval 1 ms before expiresAt", [phone, issue, ev("challenge.approved", "10:01:59.999", #"{"challengeId":"c1","approverDeviceId":"phone"}"#)]),
        ("challenge.expired exactly at expiresAt", [phone, issue, ev("challenge.expired", "10:02:00", #"{"challengeId":"c1"}"#)]),
        ("trusted_device registration 1 ms before approval + grantTtlSeconds", [phone, issue,
            ev("challenge.approved", "10:01:10", #"{"challengeId":"c1","approverDeviceId":"phone"}"#),
            ev("device.registered", "10:11:09.999", #"{"deviceId":"laptop","name":"Laptop","kind":"desktop","binding":"permanent","via":"trusted_device","challengeId":"c1"}"#)]),
        ("the last allowed failure, then verification 1 ms before expiresAt", [otp,
            ev("otp.failed", "10:02:00", #"{"otpId":"o1"}"#),
            ev("otp.verified", "10:05:59.999", #"{"otpId":"o1","grantId":"g1","grantExpiresAt":"2026-04-01T10:15:00Z"}"#)]),
        ("a grant used 1 ms before grantExpiresAt", [phone, otp,
            ev("otp.verified", "10:02:00", #"{"otpId":"o1","grantId":"g1","grantExpiresAt":"2026-04-01T10:12:00Z"}"#),
            ev("device.registered", "10:11:59.999", #"{"deviceId":"laptop","name":"Laptop","kind":"desktop","binding":"permanent","via":"otp","grantId":"g1"}"#)]),
        ("a sixth OTP exactly one hour after the first", (0..<5).map { i in
            ev("otp.issued", "10:\(i)0:00", #"{"otpId":"o\#(i)","channel":"email","target":"u***@example.com","codeHash":"\#(String(repeating: "ab", count: 32))","expiresAt":"2026-04-01T10:\#(i)5:00Z","maxAttempts":5}"#)
        } + [ev("otp.issued", "11:00:00", #"{"otpId":"o9","channel":"email","target":"u***@example.com","codeHash":"\#(String(repeating: "ab", count: 32))","expiresAt":"2026-04-01T11:05:00Z","maxAttempts":5}"#)]),
        ("via initial after a pending device was revoked (none was ever registered)", [
            ev("device.verification_requested", "09:00:00", #"{"deviceId":"tablet"}"#),
            ev("device.revoked", "09:01:00", #"{"deviceId":"tablet"}"#),
            ev("device.registered", "09:02:00", #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)]),
        ("a revoke exactly at the end of the window opened by a registration", [phone,
            ev("device.registered", "10:01:00", #"{"deviceId":"tablet","name":"Tablet","kind":"tablet","binding":"temporary","via":"admin"}"#),
            ev("device.revoked", "10:06:00", #"{"deviceId":"tablet"}"#, meta: #"{"actor":"device:phone"}"#)]),
        ("a device revoking itself once protectCurrentDevice is off", [
            line("policy.set", user: nil, at: "2026-04-01T09:00:00Z", data: #"{"protectCurrentDevice":false}"#), phone,
            ev("device.revoked", "10:01:00", #"{"deviceId":"phone"}"#, meta: #"{"actor":"device:phone"}"#)]),
        ("a requester active at issue approving itself", [phone,
            ev("challenge.issued", "10:01:00", #"{"challengeId":"c1","action":"transaction","requestingDeviceId":"phone","expiresAt":"2026-04-01T10:02:00Z"}"#),
            ev("challenge.approved", "10:01:30", #"{"challengeId":"c1","approverDeviceId":"phone"}"#)]),
        ("a repeated verification request for a pending device", [phone,
            ev("device.verification_requested", "10:01:00", #"{"deviceId":"laptop"}"#),
            ev("device.verification_requested", "10:02:00", #"{"deviceId":"laptop","name":"Laptop"}"#)]),
        ("an otp.issued during cooling (OTP steps are not cooling operations)", [phone,
            ev("device.renamed", "10:00:30", #"{"deviceId":"phone","name":"Phone Two"}"#), otp]),
    ]

    @Test(arguments: cases.indices, StorageKind.all)
    func historiesJustInsideARuleAreAccepted(_ i: Int, _ storage: StorageKind) async throws {
        let (why, lines) = Self.cases[i]
        let ledger = try await storage.freshLedger()
        let e = await refusal { try await ledger.importText(lines.joined(separator: "\n")) }
        #expect(e == nil, "\(why): \(e.map { "\($0)" } ?? "")")
        #expect(try await ledger.head().seq == UInt64(lines.count))
    }
}
