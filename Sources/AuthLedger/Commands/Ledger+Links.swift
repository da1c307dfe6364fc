import AuthLedgerCore

extension Ledger {
    /// Redeems a verification link (SPEC 11): the token's keyed hash finds its user and
    /// request through the link index (no scan), then the registration is decided and
    /// appended like any command. `invalid_event` for a token of the wrong shape,
    /// `link_invalid` for an unknown, used or superseded one, `link_expired` after its time.
    /// Runs on the writer thread with group commit; the synchronous form is `redeemLinkBlocking`.
    public func redeemLink(_ request: LinkRedemptionRequest, meta: StringMap? = nil,
                           clock: @escaping @Sendable () -> Timestamp = Timestamp.now) async throws -> CommandResult {
        try await perform(try redemption(request), meta: meta, clock: clock)
    }

    /// `redeemLink` for synchronous callers (the CLI, tests): the same group commit, the calling thread waiting.
    @discardableResult
    public func redeemLinkBlocking(_ request: LinkRedemptionRequest, meta: StringMap? = nil,
                                   clock: @escaping @Sendable () -> Timestamp = Timestamp.now) throws -> CommandResult {
        try performBlocking(try redemption(request), meta: meta, clock: clock)
    }

    /// The command a redemption is: the token checked for shape, hashed, and its user found.
    func redemption(_ request: LinkRedemptionRequest) throws -> Command {
        guard LinkToken.isWellFormed(request.token) else {
            throw LedgerError.invalid("token is not a link token (43 base64url characters)", field: "token")
        }
        let hash = LinkToken.hash(request.token, secrets: try secrets())
        guard let user = try linkOwner(hash) else {
            throw LedgerError(.linkInvalid, "the link is unknown, used or superseded", field: "token")
        }
        return .redeemLink(LinkRedemption(user: user, linkHash: hash, name: request.name, kind: request.kind,
                                          platform: request.platform, pushToken: request.pushToken, publicKey: request.publicKey))
    }

    /// The user whose request issued the link with this keyed hash, from the link index.
    func linkOwner(_ linkHash: String) throws -> String? {
        try storage.read { r in
            try r.record(.link, user: "", id: linkHash).map { try LinkRecordCodec.decode($0).user }
        }
    }
}
