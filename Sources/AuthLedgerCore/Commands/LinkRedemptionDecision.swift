/// How a link redemption becomes a registration (SPEC 11): the device whose latest request
/// holds the link, still pending, before `linkExpiresAt`.
enum LinkRedemptionDecision {
    static func registration(_ c: LinkRedemption, state: UserState, now: Timestamp) throws(LedgerError) -> DeviceRegistered {
        // A user's pending devices are few; the index found the user without a scan.
        guard let d = state.devices.values.first(where: { $0.linkHash == c.linkHash }), d.status == .pending,
              let vid = d.verificationId else {
            throw LedgerError(.linkInvalid, "the link is unknown, used or superseded", field: "token")
        }
        if let expires = d.linkExpiresAt, now >= expires {
            throw LedgerError(.linkExpired, "the link expired at \(expires)", until: expires, field: "token")
        }
        // The request's name and kind win; the body's fill in only what the request lacks.
        guard let name = d.name ?? c.name else {
            throw LedgerError(.invalidName, "the request gave no name: the redemption must", field: "name")
        }
        let kind = try d.kind.map { k throws(LedgerError) in try DeviceKind(parsing: k, path: "kind") } ?? c.kind ?? Command.Default.kind
        return DeviceRegistered(deviceId: d.deviceId, name: EventDecoder.trimName(name), kind: kind, platform: d.platform ?? c.platform,
                                pushToken: c.pushToken, binding: Command.Default.binding, via: .emailLink,
                                publicKey: c.publicKey, verificationId: vid)
    }
}
