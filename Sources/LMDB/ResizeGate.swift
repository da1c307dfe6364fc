import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Transactions of this process hold the gate shared; changing the map size holds it
/// exclusively (LMDB: only while no transaction of the process is open).
///
/// Hand-written rather than a `pthread_rwlock`: glibc's default rwlock prefers readers,
/// so overlapping long reads (exports, verify, event streams) could keep a map growth —
/// and with it every append — waiting for good. Here a waiting resize holds back new
/// read transactions, except those a thread opens while it already holds one (nested:
/// waiting would deadlock) and those opened while a write transaction is open (a
/// resize cannot run before that write ends anyway, and the write may be waiting on
/// them, as a rebuild of the projections does).
// @unchecked: its counters are guarded by `condition` (NSCondition: resizing waits on it, which Mutex cannot).
final class ResizeGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var shared = 0, writeTransactions = 0, exclusive = false, waiting = 0

    private static let depthKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Transactions the current thread has open.
    static var depth: Int {
        get { Int(bitPattern: pthread_getspecific(depthKey)) }
        set { pthread_setspecific(depthKey, UnsafeRawPointer(bitPattern: newValue)) }
    }

    func enterShared(writeTransaction: Bool) {
        let nested = Self.depth > 0
        condition.lock()
        while exclusive || (waiting > 0 && !nested && writeTransactions == 0) { condition.wait() }
        shared += 1
        if writeTransaction { writeTransactions += 1 }
        condition.unlock()
        Self.depth += 1
    }

    func leaveShared(writeTransaction: Bool) {
        Self.depth -= 1
        condition.lock()
        shared -= 1
        if writeTransaction { writeTransactions -= 1 }
        if waiting > 0 { condition.broadcast() }
        condition.unlock()
    }

    func enterExclusive() {
        condition.lock()
        waiting += 1
        while exclusive || shared > 0 { condition.wait() }
        waiting -= 1
        exclusive = true
        condition.unlock()
    }

    /// `enterExclusive` if no transaction of the process is open now; false otherwise.
    func tryEnterExclusive() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !exclusive, shared == 0 else { return false }
        exclusive = true
        return true
    }

    func leaveExclusive() {
        condition.lock()
        exclusive = false
        condition.broadcast()
        condition.unlock()
    }

    /// Resizes waiting for the gate (tests).
    var waitingResizes: Int { condition.withLock { waiting } }
}
