import AuthLedgerCore
import Crypto
import Foundation

/// Hashing beside the rules: while the writer applies the rules to a large request's next
/// events, a second thread computes each admitted event's leaf (its canonical bytes), chain
/// hash and stored bytes, in `seq` order. The writer takes the results in that order and
/// puts them in its own transaction, so the store receives exactly what hashing inline
/// gives — only computed on the other core. (Bulk appends run on one thread otherwise;
/// the leaf, chain and encoding were about a quarter of their time.)
// @unchecked: `jobs`, `hashed`, `working`, `prev`, `stopped` and `thread` are guarded by
// `condition`; a `Job` and a `Hashed` are values handed over under it.
final class HashPipeline: @unchecked Sendable {
    /// An admitted event: what its hashes depend on.
    struct Job {
        let event: Event
        let seq: UInt64
        let version: UInt64
    }

    /// The event recorded (with `prev` and `hash`), its leaf for the Merkle tree and its stored bytes.
    struct Hashed {
        let recorded: RecordedEvent
        let leaf: SHA256.Digest
        let bytes: [UInt8]
    }

    /// Requests with fewer events are hashed inline: handing a few events over costs more than it saves.
    static let minimumEvents = 64

    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var hashed: [Hashed] = []
    /// Jobs the thread took and has not yet handed back.
    private var working = 0
    /// The chain hash the next job follows.
    private var prev = Hash32.zero
    private var stopped = false
    private var thread: Thread?
    private var hashedCount = 0

    /// How many events this pipeline has hashed (for tests: that a large request used it).
    var hashedEvents: Int {
        condition.lock()
        defer { condition.unlock() }
        return hashedCount
    }

    /// Starts a request's events after `prev` (the head's hash); false once stopped (the
    /// request is then hashed inline). Nothing may be pending.
    func begin(prev: Hash32) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        precondition(jobs.isEmpty && working == 0 && hashed.isEmpty, "a hash pipeline began with work pending")
        if stopped { return false }
        self.prev = prev
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
    func take(all: Bool) -> [Hashed] {
        condition.lock()
        defer { condition.unlock() }
        while all && (!jobs.isEmpty || working > 0) { condition.wait() }
        defer { hashed = [] }
        return hashed
    }

    /// Drops what was submitted and not taken (a refused request; its writes are undone).
    func cancel() {
        condition.lock()
        jobs = []
        while working > 0 { condition.wait() }
        hashed = []
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
            condition.unlock()
            var out: [Hashed] = []
            out.reserveCapacity(batch.count)
            for job in batch {
                let leaf = RecordedEvent.leaf(job.event, seq: job.seq, version: job.version, scratch: &scratch)
                let hash = RecordedEvent.chain(prev: prev, leaf: leaf)
                let recorded = RecordedEvent(event: job.event, seq: job.seq, version: job.version, prev: prev, hash: hash)
                var bytes: [UInt8] = []
                EventCodec.encode(recorded, into: &bytes)
                out.append(Hashed(recorded: recorded, leaf: leaf, bytes: bytes))
                prev = hash
            }
            condition.lock()
            self.prev = prev
            hashed += out
            hashedCount += out.count
            working = 0
            condition.broadcast()
        }
    }
}
