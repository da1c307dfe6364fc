/// `otp.failed`: a wrong code was given.
public struct OTPFailed: Equatable, Sendable {
    public var otpId: String

    public init(otpId: String) { self.otpId = otpId }

    init(_ d: EventData) throws(LedgerError) { try self.init(otpId: d.need(.otpId, .otpFailed, EventData.string)) }

    var data: EventData { EventData([(.otpId, .text(otpId))]) }
}
