import AuthLedgerCore
import Foundation

extension Ledger {
    /// Events per run of the replay's one scan (`replayOnce`).
    /// (A test sets it small, to cross many runs.)
    nonisolated(unsafe) static var replayRun = 4096

    /// The replay's partitions and its tree check fed by one scan of the log, for a backend
    /// whose scan is dear per row and that reads it in runs without any thread waiting
    /// (`AsyncBatchScanning`: PostgreSQL). The log is read in runs, the next run's read in
    /// flight while the consumers decode the current one; each partition folds its own
    /// users' events of every run, the tree check hashes every event and compares with the
    /// stored hashes the run brought. The calling task awaits each run; only the consumers'
    /// threads hold it back, when they are `ReplayFeed`'s runs behind.
    ///
    /// With `storedLeaves`, when the store says its tree is inside the log's range, each
    /// partition folds into a stream's hash the leaf hash its run brought instead of
    /// computing it again from the event (the tree check computes every leaf once and
    /// compares it with the stored one). When that check finds the tree is not the log's,
    /// the log is scanned again without them, and the tree's leaves are then read in one
    /// more scan, as below (a rare case: three scans).
    func replayOnceAsync(_ scanning: any AsyncBatchScanning, parts: Int, through: UInt64, storedLeaves: Bool = true,
                         progress: UncheckedSendable<(UInt64, UInt64) -> Void>?) async -> ReplayScan {
        let scan = ReplayScan(box: ReplayPartitions(parts), leaves: LeafBuffer())
        let feed = ReplayFeed(consumers: parts + 1)
        let consumers = consume(feed, parts: parts, through: through, storedLeaves: storedLeaves,
                                box: scan.box, leaves: scan.leaves, progress: progress)
        do {
            try await scanning.scanRuns(from: 1, through: through, run: Ledger.replayRun, start: { feed.begin(treeInside: !$0) }, put: feed.put)
            feed.finish()
        } catch {
            feed.finish(error)
        }
        await consumers.finished()
        if case let .failure(e)? = scan.leaves.result, e is StaleTree, storedLeaves, (try? feed.treeInside()) == true {
            // The partitions folded leaves of a tree that is not the log's.
            return await replayOnceAsync(scanning, parts: parts, through: through, storedLeaves: false, progress: progress)
        }
        if case let .failure(e)? = scan.leaves.result, e is StaleTree {
            // A tree that is not the log's: its leaves from a second scan, awaited.
            do {
                scan.leaves.result = .success(try await Ledger.leafHashes(scanning, through: through, checkingChain: true))
            } catch {
                scan.leaves.result = .failure(error)
            }
        }
        return scan
    }

    /// The tree check's finding that the stored tree is not the log's: its leaves are read
    /// again after the scan (`replayOnceAsync`).
    struct StaleTree: Error {}

    /// Starts the consumers of `feed`: `parts` partitions and the tree check, on threads of
    /// their own; the group is left when they all ended.
    /// A tree that is not the log's is rebuilt from the leaves, read again by the caller
    /// after the scan (a rare case: the check's result is then `StaleTree`).
    private func consume(_ feed: ReplayFeed, parts: Int, through: UInt64, storedLeaves: Bool, box: ReplayPartitions, leaves: LeafBuffer,
                         progress: UncheckedSendable<(UInt64, UInt64) -> Void>?) -> ReplayFeed.Consumers {
        ReplayFeed.threads(parts + 1) { k in
            if k == parts {
                leaves.result = Result {
                    if try Ledger.treeCheck(feed) { return nil }
                    throw StaleTree()
                }
                if case let .failure(e) = leaves.result, !(e is StaleTree) { feed.stop() }
                return
            }
            do {
                var fold = PartitionFold(part: k, parts: parts)
                let trusted = try storedLeaves && feed.treeInside()
                var run = 0
                while let batch = try feed.take(run) {
                    run += 1
                    // A run that lacks some of its hashes folds computed leaves (the check
                    // then finds the tree is not the log's).
                    let range = LogBatch.treeRange(from: batch.first, count: batch.count)
                    let whole = trusted && batch.tree.count == 32 * Int(range.count)
                    try batch.tree.withUnsafeBytes { hashes in
                        let stored = whole ? PartitionFold.RunTree(hashes: hashes, from: range.lowerBound) : nil
                        try batch.forEach { seq, bytes, personal in
                            if k == 0 && seq % 65_536 == 0 { progress?.value(seq, through) }
                            try fold.fold(seq, bytes, run: stored) { seq, bytes in try Ledger.storedEvent(seq, bytes, personal) }
                        }
                    }
                }
                box.set(k, .success(fold.result()))
            } catch {
                box.set(k, .failure(error))
                feed.stop()
            }
        }
    }

    /// The event at `seq` from its stored bytes and its personal values (`disclose`'s work,
    /// with the values the run brought instead of a read).
    private static func storedEvent(_ seq: UInt64, _ bytes: UnsafeRawBufferPointer, _ personal: UnsafeRawBufferPointer?) throws -> Event {
        var (e, _) = try EventCodec.decodeEvent(bytes, seq: seq)
        if e.personal != nil, e.user != nil, let personal { try PersonalCodec.disclose(personal, into: &e, seq: seq) }
        return e
    }

    /// `storedTreeMatchesLog` on the runs of the feed: whether the stored tree is the one
    /// over the log, compared run by run with the stored hashes each run brought (those its
    /// leaves complete), the hash chain checked on the way (`ChainCheck`: a break throws).
    /// Takes every run either way.
    private static func treeCheck(_ feed: ReplayFeed) throws -> Bool {
        var intact = try feed.treeInside()
        var frontier = TreeFrontier()
        var hashing = StoredLeaf()
        var expected: [(UInt64, TreeFrontier.Node)] = []
        var chain = ChainCheck()
        var run = 0
        while let batch = try feed.take(run) {
            run += 1
            expected.removeAll(keepingCapacity: true)
            try batch.forEach { seq, bytes, _ in
                let leaf = try hashing.leafOrDecode(bytes, seq: seq)
                try chain.add(bytes, leaf: leaf, seq: seq)
                if intact { frontier.append(leaf) { i, _, node in expected.append((i, node)) } }
            }
            guard intact, let from = expected.first?.0 else { continue }
            guard from == LogBatch.treeRange(from: batch.first, count: batch.count).lowerBound,
                  batch.tree.count == 32 * expected.count else { intact = false; continue }
            batch.tree.withUnsafeBytes { all in
                for (k, (index, node)) in expected.enumerated()
                where index != from + UInt64(k) || TreeFrontier.Node(UnsafeRawBufferPointer(rebasing: all[(32 * k)..<(32 * k + 32)])) != node {
                    intact = false
                    break
                }
            }
        }
        return intact
    }
}

/// What the replay's one scan left: the partitions' results and the tree's leaves (nil: intact).
struct ReplayScan: Sendable {
    let box: ReplayPartitions
    let leaves: LeafBuffer
}
