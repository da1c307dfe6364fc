/// What an `issueChallenge` command says: a device asks the user's trusted devices to approve an action.
public struct ChallengeRequest: Sendable, Equatable {
    public var user: String
    public var requestingDeviceId: String
    /// A lower-case word; `login` (the default) is what a `via: trusted_device` registration needs.
    public var action: String
    /// What the approver is shown (`ip`, `location`, `app`, `bindingMessage`, …); personal data.
    public var context: StringMap?

    public init(user: String, requestingDeviceId: String, action: String = Command.Default.action, context: StringMap? = nil) {
        self.user = user
        self.requestingDeviceId = requestingDeviceId
        self.action = action
        self.context = context
    }
}
