import AuthLedgerCore
import Crypto
import Foundation
import Synchronization

/// Hashing beside the rules: while the writer applies the rules to a large request's next
/// events, a second thread seals each admitted event's personal values (fresh salts and
/// their commitments) and computes its leaf (its canonical bytes), chain hash, stored bytes,
/// values-store bytes and Merkle nodes, in `seq` order. The writer takes the results in that order and
/// puts them in its own transaction, so the store receives exactly what hashing inline
/// gives — only computed on the other core. (Bulk appends run on one thread otherwise;
/// the leaf, chain and encoding were about a quarter of their time.)
final class HashPipeline: Sendable {
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

    /// What the thread hands back and what it follows, between two jobs.
    private struct State {
        var hashed = Taken()
        /// The chain hash the next job follows.
        var prev = Hash32.zero
        /// The Merkle tree's right edge after the jobs hashed so far (nil: no tree maintained).
        var tree: TreeFrontier?
        var stopped = false
        var hashedCount = 0
    }
    private let state = Mutex(State())
    /// The thread (`DedicatedThread`, started at the first request): the writer blocks on its results.
    private let thread = DedicatedThread(name: "authledger-hash")

    /// How many events this pipeline has hashed (for tests: that a large request used it).
    var hashedEvents: Int { state.withLock { $0.hashedCount } }

    /// Starts a request's events after `prev` (the head's hash) and `tree` (the Merkle
    /// tree's right edge at the head, nil when none is maintained); false once stopped (the
    /// request is then hashed inline). Nothing may be pending.
    func begin(prev: Hash32, tree: TreeFrontier?) -> Bool {
        state.withLock { s in
            precondition(s.hashed.events.isEmpty, "a hash pipeline began with work pending")
            if s.stopped { return false }
            s.prev = prev
            s.tree = tree
            return true
        }
    }

    /// Events handed over at once (see `AppendSession`).
    static let handOver = 32

    func submit(_ batch: [Job]) {
        thread.submit { [self] in hash(batch) }
    }

    /// What is hashed so far, in `seq` order; with `all`, waits until every submitted job is.
    func take(all: Bool) -> Taken {
        if all { thread.waitIdle() }
        return state.withLock { s in
            defer { s.hashed = Taken() }
            return s.hashed
        }
    }

    /// The Merkle tree's right edge after every job hashed so far (after `take(all: true)`: the request's).
    var frontier: TreeFrontier? { state.withLock { $0.tree } }

    /// Drops what was submitted and not taken (a refused request; its writes are undone).
    func cancel() {
        thread.waitIdle(droppingQueued: true)
        state.withLock { $0.hashed = Taken() }
    }

    /// Ends the thread once it is idle.
    func stop() {
        state.withLock { $0.stopped = true }
        thread.stop()
    }

    /// Hashes `batch` on the thread, after the jobs before it.
    private func hash(_ batch: [Job]) {
        var (prev, tree) = state.withLock { ($0.prev, $0.tree) }
        var scratch: [UInt8] = []
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
        state.withLock { s in
            s.prev = prev
            s.tree = tree
            s.hashed.events += out.events
            s.hashed.nodes += out.nodes
            s.hashedCount += out.events.count
        }
    }
}
