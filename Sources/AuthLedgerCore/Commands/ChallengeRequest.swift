/// What an `issueChallenge` command says: a device asks the user's trusted devices to approve an action.
public struct ChallengeRequest: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The device that asked for the approval.
    public var requestingDeviceId: String
    /// A lower-case word; `login` (the default) is what a `via: trusted_device` registration needs.
    public var action: String
    /// What the approver is shown (`ip`, `location`, `app`, `bindingMessage`, …); personal data.
    public var context: StringMap?

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, requestingDeviceId: String, action: String = Command.Default.action, context: StringMap? = nil) {
        self.user = user
        self.requestingDeviceId = requestingDeviceId
        self.action = action
        self.context = context
    }
}
