/// What a recorded-form input line claims about its position and chain.
public struct RecordedClaims: Sendable, Equatable {
    /// The claimed global position, if the line has `seq`.
    public var seq: UInt64?
    /// The claimed stream version, if the line has `version`.
    public var version: UInt64?
    /// The claimed previous hash, if the line has `prev`.
    public var prev: Hash32?
    /// The claimed chain hash, if the line has `hash`.
    public var hash: Hash32?
    /// True for a fixture-form line: it claims nothing to check.
    public var isEmpty: Bool { seq == nil && version == nil && prev == nil && hash == nil }
    /// Claims to check when the event is appended (`chain_mismatch` when one does not hold).
    public init(seq: UInt64? = nil, version: UInt64? = nil, prev: Hash32? = nil, hash: Hash32? = nil) {
        self.seq = seq
        self.version = version
        self.prev = prev
        self.hash = hash
    }
}
