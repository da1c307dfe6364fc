import AuthLedgerTestSupport
import Foundation
@testable import LMDB
import Testing

/// The pages LMDB keeps from a large write transaction are let go (the environment
/// reopened) after it, with the store unchanged; small transactions keep them.
@Suite struct WriteCacheTests {
    static let value = [UInt8](repeating: 7, count: 8000)

    /// One transaction putting more than `WriteCache.limit` bytes.
    func writeLarge(_ env: Environment, _ db: Database, from: Int = 0) throws {
        let n = WriteCache.limit / Self.value.count + 10
        try env.write { txn in
            for i in from..<(from + n) { try txn.put(db, UInt64(i).bigEndianBytes, Self.value) }
        }
    }

    @Test func aLargeTransactionIsFollowedByAReopenAndTheStoreReadsTheSame() throws {
        let env = try Environment(path: TemporaryDirectory.make("lmdb-writecache"))
        let db = try env.database("t")
        for i in 0..<100 { try env.write { try $0.put(db, UInt64(1_000_000 + i).bigEndianBytes, Self.value) } }
        #expect(env.writeCache.releases == 0, "small transactions keep their pages")
        try writeLarge(env, db)
        #expect(env.writeCache.releases == 1)
        #expect(!env.writeCache.pending)
        // The same handles, the same data, and writes go on.
        let n = WriteCache.limit / Self.value.count + 10
        #expect(try env.read { try $0.count(db) } == n + 100)
        #expect(try env.read { try $0.get(db, UInt64(n - 1).bigEndianBytes) } == Self.value)
        try env.write { try $0.put(db, Array("after".utf8), Array("x".utf8)) }
        #expect(try env.read { try $0.get(db, Array("after".utf8)) } == Array("x".utf8))
        #expect(env.writeCache.releases == 1)
    }

    @Test func aReleaseWaitsForTheTransactionsOfOtherThreads() throws {
        let env = try Environment(path: TemporaryDirectory.make("lmdb-writecache"))
        let db = try env.database("t")
        let reading = DispatchSemaphore(value: 0), finish = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Thread {
            _ = try? env.read { _ in
                reading.signal()
                finish.wait()
            }
            done.signal()
        }.start()
        reading.wait()
        try writeLarge(env, db)
        // Not under an open read transaction: due, not done.
        #expect(env.writeCache.releases == 0 && env.writeCache.pending)
        finish.signal()
        done.wait()
        try env.write { try $0.put(db, Array("next".utf8), Array("x".utf8)) }
        #expect(env.writeCache.releases == 1 && !env.writeCache.pending)
        #expect(try env.read { try $0.get(db, UInt64(0).bigEndianBytes) } == Self.value)
    }

    /// The environment's other uses (reader checks, syncs, its info) wait for a reopen
    /// instead of reaching a closed environment from another thread.
    @Test func callsFromOtherThreadsWaitForAReopen() throws {
        let env = try Environment(path: TemporaryDirectory.make("lmdb-writecache"))
        let db = try env.database("t")
        let stop = DispatchSemaphore(value: 0), stopped = DispatchSemaphore(value: 0)
        final class Seen: @unchecked Sendable { var ids: [Int] = [] }
        let seen = Seen()
        Thread {
            while stop.wait(timeout: .now()) == .timedOut {
                seen.ids.append(env.lastTransactionID)
                _ = try? env.checkReaders()
                _ = env.mapSize
                try? env.sync()
            }
            stopped.signal()
        }.start()
        for k in 0..<3 { try writeLarge(env, db, from: k * 10_000) }
        stop.signal()
        stopped.wait()
        try env.write { try $0.put(db, Array("last".utf8), Array("x".utf8)) }
        #expect(env.writeCache.releases >= 1 && !env.writeCache.pending)
        #expect(!seen.ids.isEmpty && seen.ids == seen.ids.sorted(), "transaction ids went backwards across a reopen")
        #expect(try env.read { try $0.get(db, UInt64(20_000).bigEndianBytes) } == Self.value)
    }
}
