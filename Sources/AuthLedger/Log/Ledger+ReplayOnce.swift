import AuthLedgerCore
import Foundation

extension Ledger {
    /// Events per run of the replay's one scan (`replayOnce`).
    /// (A test sets it small, to cross many runs.)
    nonisolated(unsafe) static var replayRun = 4096

    /// The replay's partitions and its tree check fed by one scan of the log, for a backend
    /// whose scan is dear per row (`BatchScanning`: PostgreSQL). One thread reads the log in
    /// runs, the next run's read in flight while the consumers decode the current one; each
    /// partition folds its own users' events of every run, the tree check hashes every
    /// event. The results land where the partitions' own scans put them (`box`, `leaves`).
    func replayOnce(parts: Int, through: UInt64, box: ReplayPartitions, leaves: LeafBuffer,
                    progress: UncheckedSendable<(UInt64, UInt64) -> Void>?) {
        let feed = ReplayFeed(consumers: parts + 1)
        let storage = self.storage
        ReplayFeed.threads(parts + 2) { k in
            if k == parts + 1 {
                do {
                    try storage.read { r in try Ledger.scanRuns(r, through: through, into: feed) }
                    feed.finish()
                } catch {
                    feed.finish(error)
                }
            } else if k == parts {
                leaves.result = Result { try storage.read { r in try Ledger.treeCheck(r, through: through, feed: feed) } }
                if case .failure = leaves.result { feed.stop() }
            } else {
                do {
                    var fold = PartitionFold(part: k, parts: parts)
                    var run = 0
                    while let batch = try feed.take(run) {
                        run += 1
                        try batch.forEach { seq, bytes, personal in
                            if k == 0 && seq % 65_536 == 0 { progress?.value(seq, through) }
                            try fold.fold(seq, bytes) { seq, bytes in try Ledger.storedEvent(seq, bytes, personal) }
                        }
                    }
                    box.set(k, .success(fold.result()))
                } catch {
                    box.set(k, .failure(error))
                    feed.stop()
                }
            }
        }
    }

    /// Reads events 1…`through` in runs into `feed`, two reads in flight.
    private static func scanRuns(_ r: any StorageReader, through: UInt64, into feed: ReplayFeed) throws {
        guard let scan = r as? BatchScanning else { throw LedgerError(.storageError, "the store does not read the log in runs") }
        var next: UInt64 = 1
        func request() throws -> (() throws -> LogBatch)? {
            guard next <= through else { return nil }
            let n = Int(min(UInt64(replayRun), through - next + 1))
            defer { next += UInt64(n) }
            return try scan.events(from: next, count: n)
        }
        var current = try request()
        while let wait = current {
            let following = try request()
            guard feed.put(try wait()) else { return }
            current = following
        }
    }

    /// The event at `seq` from its stored bytes and its personal values (`disclose`'s work,
    /// with the values the run brought instead of a read).
    private static func storedEvent(_ seq: UInt64, _ bytes: UnsafeRawBufferPointer, _ personal: UnsafeRawBufferPointer?) throws -> Event {
        var (e, _) = try EventCodec.decodeEvent(bytes, seq: seq)
        if e.personal != nil, e.user != nil, let personal { try PersonalCodec.disclose(personal, into: &e, seq: seq) }
        return e
    }

    /// `storedTreeMatchesLog` on the runs of the feed: nil when the stored tree is the one
    /// over the log (compared run by run with the stored hashes those runs determine), else
    /// the leaf hashes to rebuild it from (read again: a rare case). Takes every run either way.
    private static func treeCheck(_ r: any StorageReader, through: UInt64, feed: ReplayFeed) throws -> [UInt8]? {
        let tree = r as? BatchScanning
        var intact = try tree.map { try !$0.treeHashesOutside(MerkleTree.storedHashCount(through)) } ?? false
        var frontier = TreeFrontier()
        var hashing = StoredLeaf()
        var expected: [(UInt64, TreeFrontier.Node)] = []
        var run = 0
        while let batch = try feed.take(run) {
            run += 1
            guard intact, let tree else { continue }
            expected.removeAll(keepingCapacity: true)
            try batch.forEach { seq, bytes, _ in
                frontier.append(try hashing.leafOrDecode(bytes, seq: seq)) { i, _, node in expected.append((i, node)) }
            }
            guard let from = expected.first?.0 else { continue }
            let stored = try tree.treeHashes(from: from, count: expected.count)
            guard stored.count == 32 * expected.count else { intact = false; continue }
            stored.withUnsafeBytes { all in
                for (k, (index, node)) in expected.enumerated()
                where index != from + UInt64(k) || TreeFrontier.Node(UnsafeRawBufferPointer(rebasing: all[(32 * k)..<(32 * k + 32)])) != node {
                    intact = false
                    break
                }
            }
        }
        return intact ? nil : try leafHashes(r, through: through)
    }
}
