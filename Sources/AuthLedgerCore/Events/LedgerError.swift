/// The stable error codes (docs/REFERENCE.md sections 1, 2 and 5).
public enum ErrorCode: String, Sendable, CaseIterable, Codable {
    /// The input's shape or a field value is wrong (SPEC 1), an expiry is not after `at`, or a `grantId` is reused.
    case invalidEvent = "invalid_event"
    /// An event `id` already in the log, with other content.
    case duplicateEventId = "duplicate_event_id"
    /// A recorded-form line's `seq`, `version`, `prev` or `hash` is not what the ledger computes.
    case chainMismatch = "chain_mismatch"
    /// The expected stream version given with an append does not hold.
    case versionConflict = "version_conflict"
    /// The event's `at` is before its stream's last one.
    case timeRegression = "time_regression"
    /// A device name is not 3–50 characters after trimming, or has a control character.
    case invalidName = "invalid_name"
    /// The device is already active.
    case deviceExists = "device_exists"
    /// The device is revoked (for good).
    case deviceRevoked = "device_revoked"
    /// No such device, or not in a state the operation needs (pending, for a rename or an access).
    case deviceNotFound = "device_not_found"
    /// A rename to the name the device already has (after trimming).
    case nameUnchanged = "name_unchanged"
    /// A registration without the proof its `via` needs (SPEC 2.2).
    case verificationRequired = "verification_required"
    /// A `via: otp` registration whose grant is unknown, used or expired.
    case grantInvalid = "grant_invalid"
    /// The user already has `maxDevices` active devices.
    case deviceLimitReached = "device_limit_reached"
    /// A device tried to revoke itself while `protectCurrentDevice` is on.
    case currentDeviceProtected = "current_device_protected"
    /// A cooling window is open (SPEC 2.5); ``LedgerError/until`` is its end.
    case coolingPeriodActive = "cooling_period_active"
    /// The `challengeId` is already used by this user.
    case challengeExists = "challenge_exists"
    /// No such challenge for this user.
    case challengeNotFound = "challenge_not_found"
    /// The challenge was already approved, denied or recorded as expired.
    case challengeResolved = "challenge_resolved"
    /// The challenge's time is up; ``LedgerError/until`` is its `expiresAt`.
    case challengeExpired = "challenge_expired"
    /// A `challenge.expired` before the challenge's `expiresAt` (``LedgerError/until``).
    case challengeNotExpired = "challenge_not_expired"
    /// The approving or denying device is not an active device allowed to resolve the challenge.
    case approverNotTrusted = "approver_not_trusted"
    /// A signature on an approval, a denial or a key rotation does not verify against the device's
    /// key (or is not a compact JWS, or the device has no key, or the challenge no nonce).
    case signatureInvalid = "signature_invalid"
    /// An unsigned approval or denial by a device with a key while `requireSignedApprovals` is on.
    case signatureRequired = "signature_required"
    /// A link token that is unknown, used, superseded, or whose device is revoked or registered.
    case linkInvalid = "link_invalid"
    /// A link token past its `linkExpiresAt` (``LedgerError/until``).
    case linkExpired = "link_expired"
    /// The `otpId` is already used by this user.
    case otpExists = "otp_exists"
    /// The user was issued `otpPerHour` OTPs within the hour; ``LedgerError/until`` is when one more is allowed.
    case otpRateLimited = "otp_rate_limited"
    /// No OTP that can still be used: unknown, superseded by a newer one, or already verified.
    case otpNotFound = "otp_not_found"
    /// The OTP's time is up; ``LedgerError/until`` is its `expiresAt`.
    case otpExpired = "otp_expired"
    /// The OTP has had `maxAttempts` failures.
    case otpLocked = "otp_locked"
    /// A wrong code; unlike every other refusal its `otp.failed` is appended (``LedgerError/remainingAttempts``).
    case otpInvalid = "otp_invalid"
    /// An erasure of a user with no events.
    case userNotFound = "user_not_found"
    /// A stored event, index or projection does not match; ``LedgerError/seq`` is the first bad position.
    case tampered = "tampered"
    /// A failure of the store (I/O, a store that cannot be opened), for that request alone.
    case storageError = "storage_error"
    /// The disk, a quota or the store's maximum size is reached: nothing of the request was appended.
    case storageFull = "storage_full"
    /// The ledger is set up wrongly: a store path that is no directory or cannot be opened, a
    /// malformed store URL, a key file missing, unreadable or of the wrong form, a program
    /// not built. Nothing was read or appended; the message names what to fix (the CLI
    /// exits 2, as for a usage error).
    case configurationError = "configuration_error"
    /// No such route, tile or entry bundle.
    case notFound = "not_found"
}

/// A refusal or failure with a stable code and the data a caller needs.
public struct LedgerError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The stable code: what a program should branch on.
    public var code: ErrorCode
    /// A human-readable explanation; its wording may change, and it never holds a secret.
    public var message: String
    /// End of the open cooling window (`cooling_period_active`); the expiry of a challenge or
    /// OTP (`challenge_expired`, `challenge_not_expired`, `otp_expired`); when one more OTP may be
    /// issued (`otp_rate_limited`).
    public var until: Timestamp?
    /// OTP attempts left (`otp_invalid`).
    public var remainingAttempts: Int?
    /// The offending input field, where there is one.
    public var field: String?
    /// What the refused command appended all the same: `otp_invalid` keeps its `otp.failed`
    /// (a wrong code counts as an attempt, SPEC 2.7). nil for every other refusal, which
    /// appends nothing.
    public var appended: [RecordedEvent]?
    /// Input location for imports: file name and 1-based line.
    public var file: String?
    /// The 1-based line of `file` (blank and comment lines counted).
    public var line: Int?
    /// The first bad position (`tampered`, `chain_mismatch`).
    public var seq: UInt64?
    /// Index of the refused event within an append request.
    public var index: Int?

    /// An error with this code and message, and the data that goes with the code.
    public init(_ code: ErrorCode, _ message: String, until: Timestamp? = nil, remainingAttempts: Int? = nil,
                field: String? = nil, seq: UInt64? = nil) {
        self.code = code
        self.message = message
        self.until = until
        self.remainingAttempts = remainingAttempts
        self.field = field
        self.seq = seq
    }

    /// An `invalid_event` error.
    public static func invalid(_ message: String, field: String? = nil) -> LedgerError {
        LedgerError(.invalidEvent, message, field: field)
    }

    /// `<code>: [FILE line N: ]message`, as the CLI prints it after `error: `.
    public var description: String {
        var s = "\(code.rawValue): "
        if let line {
            s += file.map { "\($0) line \(line): " } ?? "line \(line): "
        }
        s += message
        // SPEC 4: verify names the first bad seq (`error: tampered: … seq N`).
        if code == .tampered, let seq { s += " at seq \(seq)" }
        return s
    }

    /// The same error, located at `line` of `file` (how import reports a refused line).
    public func at(file: String?, line: Int) -> LedgerError {
        var e = self
        e.file = file
        e.line = line
        return e
    }
}
