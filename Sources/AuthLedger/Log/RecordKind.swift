import AuthLedgerCore
/// The per-user records kept in indexes beside the maintained projection state: every
/// challenge, OTP and grant a user ever had, by id (SPEC 2.6, 2.7). The state holds only
/// those that can still change in ways its own queries see (unresolved challenges, the
/// latest OTP), so its size, and the cost of an append, do not grow with the user's past.
package enum RecordKind: UInt8, CaseIterable, Sendable {
    /// Challenges, OTPs and grants (the tags are storage tags: never renumber).
    case challenge = 1, otp = 2, grant = 3
    /// Verification links (SPEC 11): the keyed hash of a link token → its user and request;
    /// one index for all users (``RecordKind/owner(_:)``), so a token is found without a scan.
    case link = 4
}
