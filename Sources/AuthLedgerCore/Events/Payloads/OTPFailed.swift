/// `otp.failed`: a wrong code was given.
public struct OTPFailed: Equatable, Sendable {
    /// The one-time code a wrong code was given for.
    public var otpId: String

    /// A payload with these fields; nothing is checked until it is appended.
    public init(otpId: String) { self.otpId = otpId }

    init(_ d: EventData) throws(LedgerError) { try self.init(otpId: d.need(.otpId, .otpFailed, EventData.string)) }

    var data: EventData { EventData([(.otpId, .text(otpId))]) }
}
