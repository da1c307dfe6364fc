/// The device-proof rules (SPEC 11): email links, device keys and signed answers.
extension UserState {
    /// A request's `verificationId` is unique per user; its link expires after `at` (`invalid_event`).
    func checkVerificationRequest(_ p: DeviceVerificationRequested, at: Timestamp) throws(LedgerError) {
        if let vid = p.verificationId, verificationIds.contains(vid) {
            throw .invalid("verificationId \(vid) was already used by this user", field: "data.verificationId")
        }
        if let h = p.linkHash, links[h] != nil {
            throw .invalid("linkHash was already issued", field: "data.linkHash")
        }
        if let expires = p.linkExpiresAt, expires <= at {
            throw .invalid("linkExpiresAt must be after at", field: "data.linkExpiresAt")
        }
    }

    /// Folds a request into its device: the latest request's link replaces any earlier one.
    mutating func recordRequest(_ p: DeviceVerificationRequested, into d: inout DeviceRecord) {
        d.verificationId = p.verificationId
        d.linkHash = p.linkHash
        d.linkExpiresAt = p.linkExpiresAt
        if let vid = p.verificationId { verificationIds.insert(vid) }
        if let h = p.linkHash, let vid = p.verificationId { links[h] = vid }
    }

    /// A link is live while a device's latest request holds it (until it is redeemed).
    public func isLiveLink(_ linkHash: String) -> Bool {
        devices.values.contains { $0.linkHash == linkHash }
    }

    /// A `via: email_link` registration of a device whose latest request has a link must name
    /// that request, unused and unexpired (`verification_required`); a `verificationId` given
    /// for a request without a link must still be the latest request's.
    func checkLinkProof(_ p: DeviceRegistered, _ pending: DeviceRecord, at: Timestamp) throws(LedgerError) {
        let id = p.deviceId
        if pending.linkHash != nil {
            guard let vid = p.verificationId, vid == pending.verificationId else {
                throw LedgerError(.verificationRequired, "device \(id) must be registered by redeeming its latest verification link", field: "verificationId")
            }
            if let expires = pending.linkExpiresAt, at >= expires {
                throw LedgerError(.verificationRequired, "the verification link of device \(id) expired at \(expires)", field: "verificationId")
            }
        } else if let vid = p.verificationId, vid != pending.verificationId {
            throw LedgerError(.verificationRequired, "verification \(vid) is not the latest request of device \(id)", field: "verificationId")
        }
    }

    /// The new key of a rotation, whose signature by the current key covers the new key's
    /// RFC 7638 thumbprint (`signature_invalid` otherwise, and for a device without a key).
    func rotatedKey(_ p: DeviceKeyRotated, current: DeviceKey?) throws(LedgerError) -> DeviceKey {
        let newKey = try DeviceKey(jwk: p.publicKey, path: "data.publicKey")
        guard let current else {
            throw LedgerError(.signatureInvalid, "device \(p.deviceId) has no key to sign a rotation with", field: "signature")
        }
        let jws = try CompactJWS(p.signature)
        guard jws.payload == Array(newKey.thumbprint.utf8), current.verifies(jws) else {
            throw LedgerError(.signatureInvalid, "the rotation of device \(p.deviceId) is not signed by its current key over the new key's thumbprint", field: "signature")
        }
        return newKey
    }

    /// A signed answer must verify against the answering device's key as of now, over the
    /// challenge's nonce (`signature_invalid`); an unsigned one by a device with a key is
    /// `signature_required` under `requireSignedApprovals`.
    func checkAnswerProof(_ c: ChallengeRecord, by device: String, decision: String, userVerified: Bool?,
                          signature: String?, policy: Policy) throws(LedgerError) {
        let key = devices[device]?.publicKey
        guard let signature else {
            if policy.requireSignedApprovals && key != nil {
                throw LedgerError(.signatureRequired, "device \(device) has a key: its answer must be signed", field: "signature")
            }
            return
        }
        guard let key else {
            throw LedgerError(.signatureInvalid, "device \(device) has no key", field: "signature")
        }
        guard let nonce = c.nonce else {
            throw LedgerError(.signatureInvalid, "challenge \(c.challengeId) has no nonce to sign", field: "signature")
        }
        let jws = try CompactJWS(signature)
        let expected = ApprovalStatement.payload(user: user, challengeId: c.challengeId, decision: decision, deviceId: device,
                                                 nonce: nonce, userVerified: userVerified)
        guard jws.payload == expected, key.verifies(jws) else {
            throw LedgerError(.signatureInvalid, "the signature is not device \(device)'s over this \(decision == "approve" ? "approval" : "denial")", field: "signature")
        }
    }
}
