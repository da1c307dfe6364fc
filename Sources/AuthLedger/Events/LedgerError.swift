/// The stable error codes (docs/REFERENCE.md sections 1, 2 and 5).
public enum ErrorCode: String, Sendable, CaseIterable, Codable {
    case invalidEvent = "invalid_event"
    case duplicateEventId = "duplicate_event_id"
    case chainMismatch = "chain_mismatch"
    case versionConflict = "version_conflict"
    case timeRegression = "time_regression"
    case invalidName = "invalid_name"
    case deviceExists = "device_exists"
    case deviceRevoked = "device_revoked"
    case deviceNotFound = "device_not_found"
    case nameUnchanged = "name_unchanged"
    case verificationRequired = "verification_required"
    case grantInvalid = "grant_invalid"
    case deviceLimitReached = "device_limit_reached"
    case currentDeviceProtected = "current_device_protected"
    case coolingPeriodActive = "cooling_period_active"
    case challengeExists = "challenge_exists"
    case challengeNotFound = "challenge_not_found"
    case challengeResolved = "challenge_resolved"
    case challengeExpired = "challenge_expired"
    case challengeNotExpired = "challenge_not_expired"
    case approverNotTrusted = "approver_not_trusted"
    case otpExists = "otp_exists"
    case otpRateLimited = "otp_rate_limited"
    case otpNotFound = "otp_not_found"
    case otpExpired = "otp_expired"
    case otpLocked = "otp_locked"
    case otpInvalid = "otp_invalid"
    case userNotFound = "user_not_found"
    case tampered = "tampered"
    case storageError = "storage_error"
    case storageFull = "storage_full"
    case unauthorized = "unauthorized"
    case forbidden = "forbidden"
    case notFound = "not_found"
    case payloadTooLarge = "payload_too_large"
    case rateLimited = "rate_limited"
}

/// A refusal or failure with a stable code and the data a caller needs.
public struct LedgerError: Error, CustomStringConvertible, Sendable, Equatable {
    public var code: ErrorCode
    public var message: String
    /// End of the open cooling window (`cooling_period_active`).
    public var until: Timestamp?
    /// OTP attempts left (`otp_invalid`).
    public var remainingAttempts: Int?
    /// The offending input field, where there is one.
    public var field: String?
    /// Input location for imports: file name and 1-based line.
    public var file: String?
    public var line: Int?
    /// The first bad position (`tampered`, `chain_mismatch`).
    public var seq: UInt64?
    /// Index of the refused event within an append request.
    public var index: Int?

    public init(_ code: ErrorCode, _ message: String, until: Timestamp? = nil, remainingAttempts: Int? = nil,
                field: String? = nil, seq: UInt64? = nil) {
        self.code = code
        self.message = message
        self.until = until
        self.remainingAttempts = remainingAttempts
        self.field = field
        self.seq = seq
    }

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

    public func at(file: String?, line: Int) -> LedgerError {
        var e = self
        e.file = file
        e.line = line
        return e
    }
}
