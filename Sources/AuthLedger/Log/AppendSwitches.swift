import Synchronization

/// What the append path does beyond the rules and the chain, per ledger: both on in every
/// store that is kept. The benchmark turns one off on a throwaway store to measure what it
/// costs in the same run (package access: no service can reach them).
package final class AppendSwitches: Sendable {
    /// Appends seal personal values as salted commitments (SPEC 1.5 of the reference: off
    /// hashes them in clear, as before commitments existed, and breaks erasure).
    package let sealPersonalData = Atomic<Bool>(true)
    /// Appends maintain the Merkle tree (off: the tree is rebuilt the next time the store is opened).
    package let maintainMerkleTree = Atomic<Bool>(true)
    /// Appends maintain the users' stream hashes (section 14; off: states are stored without
    /// them, and `verify` names the store tampered).
    package let maintainStreamHashes = Atomic<Bool>(true)

    package init() {}
}
