/// The random values a decision may use (a command needs each at most once): an id, a link
/// token, a challenge nonce and an OTP code. The log draws them before the decision (the core
/// draws no randomness of its own), so a writer that knows them can load the records they
/// would name with the rest of its group (`Ledger.perform`), and a test can fix them.
package struct DecisionDraws: Sendable {
    package let id: String
    package let linkToken: String
    package let nonce: String
    package let code: String

    package init(id: String, linkToken: String, nonce: String, code: String) {
        self.id = id
        self.linkToken = linkToken
        self.nonce = nonce
        self.code = code
    }
}

/// `decide(command, state, now, draws)`: pure — the clock, the secrets and the random values come in.
package enum Decider {
    package static func decide(_ command: Command, state: UserState, policy: Policy, now: Timestamp,
                               meta: StringMap?, secrets: () throws -> OTPSecrets,
                               draws: DecisionDraws) throws -> Decision {
        var d = Decision()
        func emit(_ payload: EventPayload) {
            d.events.append(Event(user: command.user, at: now, payload: payload, meta: meta))
        }
        let actor = meta?["actor"]

        switch command {
        case let .requestVerification(c):
            // SPEC 11: the request gets an id and a link token; only the token's keyed hash is recorded.
            let vid = draws.id
            let token = draws.linkToken
            emit(.verificationRequested(DeviceVerificationRequested(deviceId: c.deviceId, name: c.name.map(EventDecoder.trimName),
                                                                    kind: c.kind, platform: c.platform, channel: .emailLink,
                                                                    verificationId: vid, linkHash: LinkToken.hash(token, secrets: try secrets()),
                                                                    linkExpiresAt: now.adding(seconds: policy.verificationLinkTtlSeconds))))
            d.result.verificationId = vid
            d.result.token = token

        case let .register(r):
            let via = r.via ?? (state.devices[r.deviceId]?.status == .pending ? .emailLink : .initial)
            emit(.registered(DeviceRegistered(deviceId: r.deviceId, name: EventDecoder.trimName(r.name), kind: r.kind,
                                              platform: r.platform, appId: r.appId, pushToken: r.pushToken,
                                              binding: r.binding, via: via, publicKey: r.publicKey)))

        case let .rename(c):
            emit(.renamed(DeviceRenamed(deviceId: c.deviceId, name: EventDecoder.trimName(c.name))))

        case let .revoke(c):
            emit(.revoked(DeviceRevoked(deviceId: c.deviceId, reason: c.reason)))
            d.result.sessionEnded = actor == "device:\(c.deviceId)"

        case let .revokeAll(c):
            emit(.allRevoked(AllDevicesRevoked(reason: c.reason)))
            d.result.sessionEnded = true

        case let .access(c):
            emit(.accessed(DeviceAccessed(deviceId: c.deviceId)))

        case let .updatePushToken(c):
            emit(.pushTokenUpdated(DevicePushTokenUpdated(deviceId: c.deviceId, pushToken: c.pushToken)))

        case let .issueChallenge(c):
            let cid = draws.id
            let nonce = draws.nonce
            emit(.challengeIssued(ChallengeIssued(challengeId: cid, action: c.action, requestingDeviceId: c.requestingDeviceId,
                                                  expiresAt: now.adding(seconds: policy.challengeTtlSeconds), context: c.context,
                                                  nonce: nonce)))
            // A device that is already trusted approves its own challenge at once — unless it
            // has a key and answers must be signed (SPEC 11): then it signs its own approval.
            if let requester = state.devices[c.requestingDeviceId], requester.status == .active,
               !(policy.requireSignedApprovals && requester.publicKey != nil) {
                emit(.challengeApproved(ChallengeApproved(challengeId: cid, approverDeviceId: c.requestingDeviceId)))
            }
            d.result.challengeId = cid
            d.result.nonce = nonce

        case let .approve(c):
            emit(.challengeApproved(ChallengeApproved(challengeId: c.challengeId, approverDeviceId: c.deviceId, userVerified: c.userVerified,
                                                      signature: c.signature)))
            d.result.challengeId = c.challengeId

        case let .deny(c):
            emit(.challengeDenied(ChallengeDenied(challengeId: c.challengeId, approverDeviceId: c.deviceId, signature: c.signature)))
            d.result.challengeId = c.challengeId

        case let .expireChallenge(c):
            emit(.challengeExpired(ChallengeExpired(challengeId: c.challengeId)))
            d.result.challengeId = c.challengeId

        case let .sendOTP(c):
            let masked = try OTPSecrets.mask(c.target, channel: c.channel.rawValue)
            let oid = draws.id
            let code = draws.code
            let codeHash = try secrets().codeHash(user: c.user, otpId: oid, code: code)
            emit(.otpIssued(OTPIssued(otpId: oid, channel: c.channel, target: masked, codeHash: codeHash,
                                      expiresAt: now.adding(seconds: policy.otpTtlSeconds), maxAttempts: policy.otpMaxAttempts)))
            d.result.otpId = oid
            d.result.code = code

        case let .verifyOTP(c):
            let otp = try state.usableOTP(c.otpId, at: now)
            d.result.otpId = c.otpId
            if try secrets().matches(user: c.user, otpId: c.otpId, code: c.code, codeHash: otp.codeHash) {
                let gid = draws.id
                emit(.otpVerified(OTPVerified(otpId: c.otpId, grantId: gid, grantExpiresAt: now.adding(seconds: policy.grantTtlSeconds))))
                d.result.grantId = gid
            } else {
                emit(.otpFailed(OTPFailed(otpId: c.otpId)))
                let remaining = Int(max(0, otp.maxAttempts - otp.failures - 1))
                d.result.refusal = LedgerError(.otpInvalid, "wrong code; \(remaining) attempt\(remaining == 1 ? "" : "s") left",
                                               remainingAttempts: remaining, field: "code")
            }

        case let .rotateKey(c):
            emit(.keyRotated(DeviceKeyRotated(deviceId: c.deviceId, publicKey: c.publicKey, signature: c.signature)))

        case let .redeemLink(c):
            emit(.registered(try LinkRedemptionDecision.registration(c, state: state, now: now)))
            d.result.verificationId = d.events.last?.data.string(.verificationId)

        case let .setPolicy(p):
            guard !p.isEmpty else { throw LedgerError.invalid("set-policy needs at least one setting") }
            emit(.policySet(p))
        }
        return d
    }
}
