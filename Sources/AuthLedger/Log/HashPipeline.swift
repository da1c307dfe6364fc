import AuthLedgerCore
import Crypto
import Foundation

/// Hashing beside the rules: while the writer applies the rules to a large request's next
/// events, a second thread seals each admitted event's personal values (fresh salts and
/// their commitments) and computes its leaf (its canonical bytes), chain hash, stored bytes,
/// values-store bytes and Merkle nodes, in `seq` order. The writer takes the results in that order and
/// puts them in its own transaction, so the store receives exactly what hashing inline
/// gives — only computed on the other core. (Bulk appends run on one thread otherwise;
/// the leaf, chain and encoding were about a quarter of their time.)
// @unchecked: `jobs`, `hashed`, `working`, `prev`, `tree`, `stopped` and `thread` are guarded by
// `condition`; a `Job` and a `Hashed` are values handed over under it.
final class HashPipeline: @unchecked Sendable {
    /// An admitted event: what its hashes depend on.
    struct Job {
        let event: Event
        let seq: UInt64
        let version: UInt64
        /// Whether the event's personal values still need their commitments, with fresh
        /// salts (`PersonalData.sealWithNewSalts`), before it is hashed.
        let seal: Bool
    }

    /// The event recorded (with `prev` and `hash`, sealed), its stored bytes, its personal
    /// values for the values store (nil: none, or no user), and how many of the Merkle
    /// tree's nodes it completes (taken in order from `Taken.nodes`).
    struct Hashed {
        let recorded: RecordedEvent
        let bytes: [UInt8]
        let values: [UInt8]?
        let nodeCount: Int
        /// Its leaf hash (for its stream's hash).
        let leaf: SHA256.Digest
    }

    /// What `take` hands back: the events in `seq` order, and their tree nodes (stored index
    /// and hash) one after the other (empty when no tree is maintained).
    struct Taken {
        var events: [Hashed] = []
        var nodes: [(UInt64, TreeFrontier.Node)] = []
    }

    /// Requests with fewer events are hashed inline: handing a few events over costs more than it saves.
    static let minimumEvents = 64

    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var hashed = Taken()
    /// Jobs the thread took and has not yet handed back.
    private var working = 0
    /// The chain hash the next job follows.
    private var prev = Hash32.zero
    /// The Merkle tree's right edge after the jobs hashed so far (nil: no tree maintained).
    private var tree: TreeFrontier?
    private var stopped = false
    private var thread: Thread?
    private var hashedCount = 0

    /// How many events this pipeline has hashed (for tests: that a large request used it).
    var hashedEvents: Int {
        condition.lock()
        defer { condition.unlock() }
        return hashedCount
    }

    /// Starts a request's events after `prev` (the head's hash) and `tree` (the Merkle
    /// tree's right edge at the head, nil when none is maintained); false once stopped (the
    /// request is then hashed inline). Nothing may be pending.
    func begin(prev: Hash32, tree: TreeFrontier?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        precondition(jobs.isEmpty && working == 0 && hashed.events.isEmpty, "a hash pipeline began with work pending")
        if stopped { return false }
        self.prev = prev
        self.tree = tree
        if thread == nil {
            let t = Thread { [self] in run() }
            t.name = "authledger-hash"
            thread = t
            t.start()
        }
        return true
    }

    /// Events handed over at once (see `AppendSession`).
    static let handOver = 32

    func submit(_ batch: [Job]) {
        condition.lock()
        let wasEmpty = jobs.isEmpty
        jobs += batch
        if wasEmpty { condition.signal() }
        condition.unlock()
    }

    /// What is hashed so far, in `seq` order; with `all`, waits until every submitted job is.
    func take(all: Bool) -> Taken {
        condition.lock()
        defer { condition.unlock() }
        while all && (!jobs.isEmpty || working > 0) { condition.wait() }
        defer { hashed = Taken() }
        return hashed
    }

    /// The Merkle tree's right edge after every job hashed so far (after `take(all: true)`: the request's).
    var frontier: TreeFrontier? {
        condition.lock()
        defer { condition.unlock() }
        return tree
    }

    /// Drops what was submitted and not taken (a refused request; its writes are undone).
    func cancel() {
        condition.lock()
        jobs = []
        while working > 0 { condition.wait() }
        hashed = Taken()
        condition.unlock()
    }

    /// Ends the thread once it is idle.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        var scratch: [UInt8] = []
        condition.lock()
        while true {
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                thread = nil
                condition.unlock()
                return
            }
            let batch = jobs
            jobs = []
            working = batch.count
            var prev = self.prev
            var tree = self.tree
            condition.unlock()
            var out = Taken()
            out.events.reserveCapacity(batch.count)
            if tree != nil { out.nodes.reserveCapacity(2 * batch.count + 8) }
            for job in batch {
                var event = job.event
                if job.seal { PersonalData.sealWithNewSalts(&event) }
                let leaf = RecordedEvent.leaf(event, seq: job.seq, version: job.version, scratch: &scratch)
                let hash = RecordedEvent.chain(prev: prev, leaf: leaf)
                let recorded = RecordedEvent(event: event, seq: job.seq, version: job.version, prev: prev, hash: hash)
                var bytes: [UInt8] = []
                EventCodec.encode(recorded, into: &bytes)
                let values = event.user == nil ? nil : PersonalCodec.encode(event)
                let before = out.nodes.count
                tree?.append(leaf) { index, _, node in out.nodes.append((index, node)) }
                out.events.append(Hashed(recorded: recorded, bytes: bytes, values: values, nodeCount: out.nodes.count - before, leaf: leaf))
                prev = hash
            }
            condition.lock()
            self.prev = prev
            self.tree = tree
            hashed.events += out.events
            hashed.nodes += out.nodes
            hashedCount += out.events.count
            working = 0
            condition.broadcast()
        }
    }
}
