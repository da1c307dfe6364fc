/// One challenge of a user (SPEC 2.6), folded from its `challenge.*` events.
public struct ChallengeRecord: Equatable, Sendable {
    /// The challenge's id, unique within its user.
    public var challengeId: String
    /// What the requester asks to do: a lower-case word such as `login` or `transaction`.
    public var action: String
    /// The device that asked; it need not be known to the ledger.
    public var requestingDeviceId: String
    /// The `at` of its `challenge.issued`.
    public var issuedAt: Timestamp
    /// From this time on the challenge is expired (SPEC 2.6).
    public var expiresAt: Timestamp
    /// The `context` strings shown to the approver, if any; erased values read `PersonalData.erasedMarker`.
    public var context: StringMap?
    /// The requester was an active device when the challenge was issued (it may approve itself).
    public var requesterWasActive: Bool
    /// The recorded resolution; `outcome(at:)` adds silent expiry.
    public var resolution: ChallengeOutcome = .pending
    /// When its approval, denial or `challenge.expired` was recorded; nil while unresolved.
    public var resolvedAt: Timestamp?
    /// The device that approved or denied it; nil otherwise.
    public var approverDeviceId: String?
    /// The approval's `userVerified` flag (the user passed a biometric or PIN check), when the approver gave one.
    public var userVerified: Bool?
    /// The device whose registration consumed this approval (`via: trusted_device`).
    public var usedBy: String?
    /// The nonce a signed answer must carry (SPEC 11); nil for challenges issued without one.
    public var nonce: String?

    /// The outcome at time `t`: a challenge is expired from `expiresAt` on, event or not.
    public func outcome(at t: Timestamp) -> ChallengeOutcome {
        isOverdue(at: t) ? .expired : resolution
    }

    /// Still recorded as pending at `t` although its time is up: its `challenge.expired`
    /// is owed (what the sweepers append) and approving or denying it is `challenge_expired`.
    public func isOverdue(at t: Timestamp) -> Bool {
        resolution == .pending && Self.hasExpired(expiresAt, at: t)
    }

    /// SPEC 2.6, the one place the expiry rule is written: a challenge that expires at
    /// `expiresAt` is expired at every `t ≥ expiresAt`.
    public static func hasExpired(_ expiresAt: Timestamp, at t: Timestamp) -> Bool { t >= expiresAt }

    /// The memberwise initializer, for the log's codec and tests.
    package init(challengeId: String, action: String, requestingDeviceId: String, issuedAt: Timestamp, expiresAt: Timestamp, context: StringMap? = nil, requesterWasActive: Bool, resolution: ChallengeOutcome = .pending, resolvedAt: Timestamp? = nil, approverDeviceId: String? = nil, userVerified: Bool? = nil, usedBy: String? = nil, nonce: String? = nil) {
        self.challengeId = challengeId
        self.action = action
        self.requestingDeviceId = requestingDeviceId
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.context = context
        self.requesterWasActive = requesterWasActive
        self.resolution = resolution
        self.resolvedAt = resolvedAt
        self.approverDeviceId = approverDeviceId
        self.userVerified = userVerified
        self.usedBy = usedBy
        self.nonce = nonce
    }
}
