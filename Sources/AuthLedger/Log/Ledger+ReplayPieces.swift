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
    ///
    /// `folded` runs on the calling thread (the write transaction's) as soon as the
    /// partitions are done, while the chunks are still being checked on the other threads:
    /// the rebuild's writing, which only that thread can do, no longer leaves the other
    /// cores idle at the end. Its error, if any, is thrown once every chunk has ended.
    func replayInPieces(parts: Int, through: UInt64, box: ReplayPartitions, leaves: LeafBuffer,
                        progress: UncheckedSendable<(UInt64, UInt64) -> Void>?, chunk: Int = treeCheckChunk,
                        folded: () throws -> Void = {}) throws {
        let storage = self.storage
        // A tree of the wrong size is rebuilt without comparing its hashes.
        let counted = Result { try storage.read { r in try r.treeHashCount() == MerkleTree.storedHashCount(through) } }
        let chunks = (try? counted.get()) == true ? Ledger.treeCheckChunks(through: through, chunk: chunk) : []
        let checked = ChunkResults(chunks.count)
        // Taken in this order by a thread per core, the partitions (the longer pieces) first.
        let partitions = DispatchGroup()
        for _ in 0..<parts { partitions.enter() }
        let pieces = parts + chunks.count
        let checks = ReplayFeed.threads(min(pieces, ProcessInfo.processInfo.activeProcessorCount)) { _ in
            while case let piece = checked.nextPiece(), piece < pieces {
                if piece >= parts {
                    let (from, to) = chunks[piece - parts]
                    let same = Result { try storage.read { r in try Ledger.storedTreeMatchesLog(r, from: from, to: to) } }
                    checked.set(piece - parts, same)
                    continue
                }
                do {
                    let result = try storage.read { r in
                        try Ledger.replayPartition(r, part: piece, of: parts, through: through,
                                                   progress: piece == 0 ? progress?.value : nil)
                    }
                    box.set(piece, .success(result))
                } catch {
                    box.set(piece, .failure(error))
                }
                partitions.leave()
            }
        }
        partitions.wait()
        let written = Result { try folded() }
        checks.wait()
        leaves.result = Result {
            var intact = try counted.get()
            for same in checked.results where try !same!.get() { intact = false }
            return intact ? nil : try storage.read { r in try Ledger.leafHashes(r, through: through, checkingChain: true) }
        }
        try written.get()
    }
}

/// The chunks' results of `replayInPieces`, and the next piece to take.
private final class ChunkResults: Sendable {
    private let slots: Mutex<[Result<Bool, Error>?]>
    private let next = Atomic(0)
    init(_ n: Int) { slots = Mutex(Array(repeating: nil, count: n)) }
    var results: [Result<Bool, Error>?] { slots.withLock { $0 } }
    func set(_ k: Int, _ r: Result<Bool, Error>) { slots.withLock { $0[k] = r } }
    /// The index of the next piece (partitions first, then chunks), each given once.
    func nextPiece() -> Int { next.add(1, ordering: .relaxed).oldValue }
}
