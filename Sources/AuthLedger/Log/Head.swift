import AuthLedgerCore

/// The log's head: the last `seq` and its chain hash (seq 0 and zero hash when empty).
public struct Head: Equatable, Sendable {
    /// The last `seq` (0 for an empty log).
    public var seq: UInt64
    /// The chain hash of the event at `seq` (zero for an empty log).
    public var hash: Hash32
    /// A head at `seq` with the chain hash `hash` (the drivers read it from their stores).
    package init(seq: UInt64, hash: Hash32) {
        self.seq = seq
        self.hash = hash
    }

    /// The head of an empty log.
    public static let empty = Head(seq: 0, hash: .zero)
}
