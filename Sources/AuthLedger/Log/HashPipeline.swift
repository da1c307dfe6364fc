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
        let leaf: TreeFrontier.Node
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
        /// The stream heads at the request's start (nil: stream hashes are folded by the writer).
        var streams: [String: StreamHead]?
        /// The heads before the request of the streams loaded since it began (nil: stored without one).
        var starts: [String: StreamHead?] = [:]
        /// The heads of the streams this request's events extended so far.
        var folded: [String: StreamHead] = [:]
        /// The leaves of streams whose head at the start is not known (stored without one):
        /// the writer folds them (`AppendSession.foldStreamLeaves`).
        var unknown: [(user: String, step: StreamStep)] = []
    }
    private let state = Mutex(State())
    /// The thread (`DedicatedThread`, started at the first request): the writer blocks on its results.
    private let thread = DedicatedThread(name: "authledger-hash")

    /// How many events this pipeline has hashed (for tests: that a large request used it).
    var hashedEvents: Int { state.withLock { $0.hashedCount } }

    /// Starts a request's events after `prev` (the head's hash) and `tree` (the Merkle
    /// tree's right edge at the head, nil when none is maintained); false once stopped (the
    /// request is then hashed inline). With `streams` (the user streams' heads before the
    /// request, more coming with `submit`), each user event's leaf is also folded into its
    /// stream's head (`StreamHead.adding`), in `seq` order: `streamSteps` hands them back.
    /// Nothing may be pending.
    func begin(prev: Hash32, tree: TreeFrontier?, streams: [String: StreamHead]? = nil) -> Bool {
        state.withLock { s in
            precondition(s.hashed.events.isEmpty, "a hash pipeline began with work pending")
            if s.stopped { return false }
            s.prev = prev
            s.tree = tree
            s.streams = streams
            s.starts = [:]
            s.folded = [:]
            s.unknown = []
            return true
        }
    }

    /// The request's stream steps after `take(all: true)`: the head of each stream its
    /// events extended, and the leaves of those whose head was not known, for the writer to
    /// fold after the steps before them (`AppendSession.streamLeaves`).
    /// (The heads at the start are let go: the writer's copy changes next.)
    func takeStreamSteps() -> [(user: String, step: StreamStep)] {
        state.withLock { s in
            defer { s.streams = nil; s.starts = [:]; s.folded = [:]; s.unknown = [] }
            return s.folded.map { ($0.key, .head($0.value)) } + s.unknown
        }
    }

    /// Events handed over at once (see `AppendSession`).
    static let handOver = 32

    /// Hands `batch` over, with the heads before the request of the streams loaded since
    /// `begin` (nil: stored without one) when stream heads are folded here.
    func submit(_ batch: [Job], heads: [(String, StreamHead?)] = []) {
        thread.submit { [self] in hash(batch, heads: heads) }
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
        state.withLock { s in
            s.hashed = Taken()
            s.streams = nil
            s.starts = [:]
            s.folded = [:]
            s.unknown = []
        }
    }

    /// Ends the thread once it is idle.
    func stop() {
        state.withLock { $0.stopped = true }
        thread.stop()
    }

    /// Hashes `batch` on the thread, after the jobs before it.
    private func hash(_ batch: [Job], heads: [(String, StreamHead?)]) {
        var (prev, tree, streams, starts, folded, unknown) = state.withLock { s in
            defer { s.streams = nil; s.starts = [:]; s.folded = [:]; s.unknown = [] }
            return (s.prev, s.tree, s.streams, s.starts, s.folded, s.unknown)
        }
        for (user, head) in heads { starts[user] = .some(head) }
        var scratch: [UInt8] = []
        var out = Taken()
        out.events.reserveCapacity(batch.count)
        if tree != nil { out.nodes.reserveCapacity(2 * batch.count + 8) }
        for job in batch {
            var event = job.event
            if job.seal { PersonalData.sealWithNewSalts(&event) }
            let leaf = TreeFrontier.Node.leaf(event, seq: job.seq, version: job.version, scratch: &scratch)
            let hash = TreeFrontier.Node.chain(prev: prev, leaf: leaf)
            let recorded = RecordedEvent(event: event, seq: job.seq, version: job.version, prev: prev, hash: hash)
            var bytes: [UInt8] = []
            EventCodec.encode(recorded, into: &bytes)
            let values = event.user == nil ? nil : PersonalCodec.encode(event)
            let before = out.nodes.count
            tree?.append(leaf) { index, _, node in out.nodes.append((index, node)) }
            out.events.append(Hashed(recorded: recorded, bytes: bytes, values: values, nodeCount: out.nodes.count - before, leaf: leaf))
            prev = hash
            if let streams, let user = event.user {
                // Its head: as extended by this request, or as loaded (since the start, or before).
                let head: StreamHead?
                if let h = folded[user] {
                    head = h
                } else if let k = starts.index(forKey: user) {
                    head = starts.values[k]
                } else {
                    head = streams[user]
                }
                if let head {
                    folded[user] = head.adding(leaf, seq: job.seq)
                } else {
                    // Stored without a head: the writer computes it from the stream.
                    unknown.append((user, .leaf(seq: job.seq, leaf)))
                }
            }
        }
        state.withLock { s in
            s.prev = prev
            s.tree = tree
            s.streams = streams
            s.starts = starts
            s.folded = folded
            s.unknown = unknown
            s.hashed.events += out.events
            s.hashed.nodes += out.nodes
            s.hashedCount += out.events.count
        }
    }
}
