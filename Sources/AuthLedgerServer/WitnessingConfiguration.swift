import AuthLedgerWitness

/// How the server collects witness cosignatures of its checkpoints (`serve --witness-policy`).
public struct WitnessingConfiguration: Sendable {
    /// The C2SP tlog-policy: the witnesses (each with a URL), groups and the quorum.
    public var policy: WitnessPolicy
    /// How often the head is checked and new checkpoints are sent (default 5 s).
    public var interval: Duration = .seconds(5)
    /// How long one request to a witness may take.
    public var requestTimeout: Duration = .seconds(10)
    /// The longest wait before a failing witness is tried again.
    public var maxBackoff: Duration = .seconds(30)

    /// Collects cosignatures from the witnesses of `policy`; every witness needs a URL.
    public init(policy: WitnessPolicy) throws {
        if let w = policy.witnesses.first(where: { $0.url == nil }) {
            throw ServerConfigurationError("the witness policy's witness \(w.label) has no URL (witness <name> <vkey> <URL>)")
        }
        self.policy = policy
    }
}
