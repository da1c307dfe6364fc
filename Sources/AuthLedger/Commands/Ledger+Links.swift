import AuthLedgerCore

extension Ledger {
    /// Redeems a verification link (SPEC 11): the token's keyed hash finds its user and
    /// request through the link index (no scan), then the registration is decided and
    /// appended like any command. `invalid_event` for a token of the wrong shape,
    /// `link_invalid` for an unknown, used or superseded one, `link_expired` after its time.
    /// Runs on the writer thread with group commit.
    public func redeemLink(_ request: LinkRedemptionRequest, meta: StringMap? = nil,
                           clock: @escaping @Sendable () -> Timestamp = Timestamp.now) async throws -> CommandResult {
        let hash = try linkHash(request)
        var load = ReadLoad()
        load.records = [(.link, "", hash)]
        let user = try await read(load) { try Ledger.linkOwner($0, hash) }
        return try await perform(try redemption(request, hash: hash, user: user), meta: meta, clock: clock)
    }

    /// A redemption's token checked for shape, and its keyed hash (the link index's key).
    func linkHash(_ request: LinkRedemptionRequest) throws -> String {
        guard LinkToken.isWellFormed(request.token) else {
            throw LedgerError.invalid("token is not a link token (43 base64url characters)", field: "token")
        }
        return LinkToken.hash(request.token, secrets: try secrets())
    }

    /// The user whose request issued the link with this keyed hash, from the link index.
    static func linkOwner(_ r: any StorageReader, _ linkHash: String) throws -> String? {
        try r.record(.link, user: "", id: linkHash).map { try LinkRecordCodec.decode($0).user }
    }

    /// The command a redemption is, once its link's user was looked up.
    func redemption(_ request: LinkRedemptionRequest, hash: String, user: String?) throws -> Command {
        guard let user else {
            throw LedgerError(.linkInvalid, "the link is unknown, used or superseded", field: "token")
        }
        return .redeemLink(LinkRedemption(user: user, linkHash: hash, name: request.name, kind: request.kind,
                                          platform: request.platform, pushToken: request.pushToken, publicKey: request.publicKey))
    }
}
