import AuthLedgerCore
import Foundation
import Synchronization

extension Ledger {
    /// The replay's work in pieces over the cores, for a backend whose scans are cheap
    /// (LMDB): each partition of the streams scans the log on its own, and the stored
    /// tree's check comes in chunks of events (`storedTreeMatchesLog(_:from:to:)`), each
    /// independent of the others, so it no longer runs as one long piece on one core. The
    /// partitions go first (the longer pieces), the chunks fill in behind them. The results
    /// land in `box` and `leaves` (nil when the stored tree is intact; else every leaf, for
    /// the tree's rebuild).
    func replayInPieces(_ storage: any InPlaceStorage, parts: Int, through: UInt64, box: ReplayPartitions, leaves: LeafBuffer,
                        progress: UncheckedSendable<(UInt64, UInt64) -> Void>?, chunk: Int = treeCheckChunk) {
        // A tree of the wrong size is rebuilt without comparing its hashes.
        let counted = Result { try storage.read { r in try r.treeHashCount() == MerkleTree.storedHashCount(through) } }
        let chunks = (try? counted.get()) == true ? Ledger.treeCheckChunks(through: through, chunk: chunk) : []
        let checked = Mutex<[Result<Bool, Error>?]>(Array(repeating: nil, count: chunks.count))
        // The partitions fold the stored leaf hashes into the streams' hashes when the tree
        // is of the right size: the chunks' check computes every leaf and compares them.
        let storedLeaves = !chunks.isEmpty
        DispatchQueue.concurrentPerform(iterations: parts + chunks.count) { piece in
            if piece >= parts {
                let (from, to) = chunks[piece - parts]
                let same = Result { try storage.read { r in try Ledger.storedTreeMatchesLog(r, from: from, to: to) } }
                checked.withLock { $0[piece - parts] = same }
                return
            }
            fold(piece, storedLeaves: storedLeaves)
        }
        leaves.result = Result {
            var intact = try counted.get()
            for same in checked.withLock({ $0 }) where try !same!.get() { intact = false }
            return intact ? nil : try storage.read { r in try Ledger.leafHashes(r, through: through, checkingChain: true) }
        }
        // A stored tree that is not the log's: its leaves were not the events', so the
        // streams' hashes are folded again from the events (a rare case).
        if storedLeaves, case .success(let all)? = leaves.result, all != nil {
            DispatchQueue.concurrentPerform(iterations: parts) { fold($0, storedLeaves: false) }
        }

        @Sendable func fold(_ piece: Int, storedLeaves: Bool) {
            do {
                let result = try storage.read { r in
                    try Ledger.replayPartition(r, part: piece, of: parts, through: through, storedLeaves: storedLeaves,
                                               progress: piece == 0 ? progress?.value : nil)
                }
                box.set(piece, .success(result))
            } catch {
                box.set(piece, .failure(error))
            }
        }
    }
}
