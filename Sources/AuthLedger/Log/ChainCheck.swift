import AuthLedgerCore

/// Replay's check of the hash chain (SPEC 1.2), on each event's stored bytes and the leaf
/// the tree's check computed from them anyway: the event's `prev` is the `hash` stored with
/// the event before it, and its `hash` is `SHA-256(prev ‖ leaf)`. So a replay refuses a log
/// whose events were changed (`tampered`, with `verify`'s words) instead of rebuilding the
/// Merkle tree over them, and the check costs one SHA-256 block per event. It runs in the
/// same pieces as the tree's check (chunks over the cores): a chunk starts from the hash
/// stored with the event before it, so the links between chunks are checked too.
struct ChainCheck {
    /// The hash the next event's `prev` must be.
    private var last: TreeFrontier.Node

    /// Before the first event.
    init() { last = Hash32.zero.bytes.withUnsafeBytes { TreeFrontier.Node($0) } }

    /// Before the event at `seq`: the zero hash at the first, else the hash stored with the event before.
    init(before seq: UInt64, _ r: any StorageReader) throws {
        self.init()
        guard seq > 1 else { return }
        let hash = try r.withEventBytes(seq - 1) { b -> TreeFrontier.Node? in
            guard let b, b.count >= ChainCheck.hashes.upperBound else { return nil }
            return TreeFrontier.Node(UnsafeRawBufferPointer(rebasing: b[ChainCheck.hash]))
        }
        guard let hash else { throw LedgerError(.tampered, "event missing", seq: seq - 1) }
        last = hash
    }

    /// Where a stored event keeps `prev` and `hash` (after its format and type bytes: `EventCodec`).
    static let prev = 2..<34, hash = 34..<66, hashes = 2..<66

    /// Checks the stored event at `seq` whose leaf is `leaf`; it is then the one the next follows.
    mutating func add(_ bytes: UnsafeRawBufferPointer, leaf: TreeFrontier.Node, seq: UInt64) throws {
        guard bytes.count >= ChainCheck.hashes.upperBound else { throw LedgerError(.tampered, "stored event is not decodable", seq: seq) }
        let prev = UnsafeRawBufferPointer(rebasing: bytes[ChainCheck.prev])
        guard TreeFrontier.Node(prev) == last else { throw LedgerError(.tampered, "prev does not link to the previous hash", seq: seq) }
        let hash = TreeFrontier.Node(UnsafeRawBufferPointer(rebasing: bytes[ChainCheck.hash]))
        guard leaf.withUnsafeBytes({ TreeFrontier.Node.sha256(prev, $0) }) == hash else { throw LedgerError(.tampered, "hash does not match the event's content", seq: seq) }
        last = hash
    }
}
