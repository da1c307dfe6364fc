/// What a command did: the events it appended and what the caller gets back.
public struct CommandResult: Sendable {
    /// The events appended, in order.
    public var events: [RecordedEvent] = []
    /// The challenge issued, approved, denied or expired.
    public var challengeId: String?
    /// The nonce of the challenge issued, which a signed answer covers.
    public var nonce: String?
    /// The OTP issued or checked.
    public var otpId: String?
    /// The OTP code: returned once to the caller, never stored or logged.
    public var code: String?
    /// The grant a verified OTP created: what a `via: otp` registration names.
    public var grantId: String?
    /// The verification request made (`requestVerification`) or completed (`redeemLink`).
    public var verificationId: String?
    /// The link token of a verification request: returned once to the caller, never stored or logged.
    public var token: String?
    /// The caller's own device was revoked, or all were.
    public var sessionEnded = false
    /// A refusal that still appends its events (`otp_invalid` appends `otp.failed`): the ledger
    /// commits them, then throws it with them in ``LedgerError/appended``.
    package var refusal: LedgerError?

    /// An empty result: nothing appended.
    public init() {}

    /// The result as the CLI's `--json` and the HTTP API answer it: `events` as `seq` and `type`,
    /// then the ids, the code and `sessionEnded` that are set (never `refusal`).
    public var json: JSON {
        var m: [(String, JSON)] = [("events", .array(events.map { .object([("seq", .int(Int64($0.seq))), ("type", .string($0.event.type.name))]) }))]
        if let challengeId { m.append(("challengeId", .string(challengeId))) }
        if let nonce { m.append(("nonce", .string(nonce))) }
        if let otpId { m.append(("otpId", .string(otpId))) }
        if let code { m.append(("code", .string(code))) }
        if let grantId { m.append(("grantId", .string(grantId))) }
        if let verificationId { m.append(("verificationId", .string(verificationId))) }
        if let token { m.append(("token", .string(token))) }
        if sessionEnded { m.append(("sessionEnded", .bool(true))) }
        return .object(m)
    }
}
