/// What a `sendOTP` command says: a one-time code to send.
public struct OTPRequest: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// Where the code goes: `email` or `sms`.
    public var channel: OTPChannel
    /// The address to send it to (an e-mail address or phone number); only its masked form is recorded.
    public var target: String

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, channel: OTPChannel, target: String) {
        self.user = user
        self.channel = channel
        self.target = target
    }
}
