import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// LMDB keeps every single page a write transaction made dirty, once it committed, in a
/// list of its own (`me_dpages`) for later transactions to reuse, and frees that list only
/// when the environment closes. One large transaction — a rebuild of the projections
/// writes every state and record, a large import — would so keep its size in the process
/// for good (~150 MB of heap after replaying a million events), though no later
/// transaction needs as many. After a transaction that put `limit` bytes or more, the
/// environment is closed and reopened once no transaction of this process is open (right
/// after that commit, or after a later one), and the C heap trimmed: the pages go back to
/// the system. The usual transactions (a group commit, a bulk batch of 10,000 events) put
/// far less and keep their pages for reuse.
final class WriteCache: Sendable {
    /// Bytes put by one transaction beyond which its pages are let go.
    static let limit = 32 << 20
    private let due = Atomic<Bool>(false)
    private let count = Atomic<Int>(0)

    /// Times the pages were let go (tests).
    var releases: Int { count.load(ordering: .relaxed) }
    /// Whether a release waits for a moment without transactions.
    var pending: Bool { due.load(ordering: .relaxed) }

    /// After a commit of `bytes` (the gate left): lets go of the pages when due and possible.
    func committed(_ bytes: Int, _ environment: Environment) {
        if bytes >= Self.limit { due.store(true, ordering: .relaxed) }
        // Not from inside another transaction of this thread (it holds the gate).
        guard due.load(ordering: .relaxed), ResizeGate.depth == 0, environment.gate.tryEnterExclusive() else { return }
        defer { environment.gate.leaveExclusive() }
        do {
            try environment.reopenHoldingGate()
        } catch {
            return  // tried again after the next commit
        }
        due.store(false, ordering: .relaxed)
        count.add(1, ordering: .relaxed)
        _ = WriteCache.mallocTrim?(0)
    }

    /// glibc's `malloc_trim` (not in the Glibc module's headers), nil where there is none.
    static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let f = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(f, to: (@convention(c) (Int) -> Int32).self)
    }()
}
