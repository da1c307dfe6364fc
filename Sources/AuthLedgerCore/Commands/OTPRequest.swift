/// What a `sendOTP` command says: a one-time code to send.
public struct OTPRequest: Sendable, Equatable {
    public var user: String
    public var channel: OTPChannel
    /// The address to send it to (an e-mail address or phone number); only its masked form is recorded.
    public var target: String

    public init(user: String, channel: OTPChannel, target: String) {
        self.user = user
        self.channel = channel
        self.target = target
    }
}
