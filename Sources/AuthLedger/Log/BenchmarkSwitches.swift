import Synchronization
import AuthLedgerCore
/// Switches for `authledger bench` only, to measure what a part of the append path costs
/// in the same run. Never set them on a store you keep: a store appended with
/// `skipMerkleTree` has its Merkle tree rebuilt the next time it is opened.
public enum BenchmarkSwitches {
    /// Appends skip the Merkle tree (the tree-overhead phase's baseline).
    public static let skipMerkleTree = Atomic<Bool>(false)
}
