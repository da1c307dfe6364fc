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

    /// Resident kB of `path`'s data.mdb mapping in this process (/proc/self/smaps).
    static func residentMapKB(_ path: String) -> Int {
        // Read in full (a single read of a /proc file stops at a page: not String(contentsOfFile:)).
        guard let data = FileHandle(forReadingAtPath: "/proc/self/smaps")?.readDataToEndOfFile() else { return -1 }
        var inMap = false, kb = 0
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            if let first = line.first, first.isHexDigit, line.contains("-") { inMap = line.hasSuffix(path + "/data.mdb") }
            else if inMap, line.hasPrefix("Rss:") { kb += Int(line.split(separator: " ")[1]) ?? 0 }
        }
        return kb
    }

    @Test(arguments: [true, false]) func readsLetGoOfTheMapsPagesWhenTheProcessHoldsMuchOfItsFiles(_ over: Bool) throws {
        let dir = TemporaryDirectory.make("lmdb-reads")
        let env = try Environment(path: dir)
        // Over the limit (none) or under it (one the process never reaches: the default, 96 MB,
        // depends on what else the test process holds).
        env.residentFileLimit = over ? 0 : Int.max
        let db = try env.database("t")
        let n = 4_000  // 32 MB of values
        try env.write { txn in for i in 0..<n { try txn.put(db, UInt64(i).bigEndianBytes, Self.value) } }
        // One read touching every value: the map's pages are resident.
        try env.read { txn in for i in 0..<n { _ = try txn.get(db, UInt64(i).bigEndianBytes) } }
        let touched = Self.residentMapKB(dir)
        #expect(touched > 20_000, "\(touched) kB resident after reading 32 MB")
        // Small reads until the count reaches a release.
        for _ in 0..<Environment.readsPerCheck { _ = try env.read { try $0.get(db, UInt64(0).bigEndianBytes) } }
        let after = Self.residentMapKB(dir)
        if over {
            #expect(after < 1_000, "\(after) kB still resident")
        } else {
            #expect(after >= touched - 100, "a working set under the limit was let go: \(touched) -> \(after) kB")
        }
        #expect(try env.read { try $0.get(db, UInt64(n - 1).bigEndianBytes) } == Self.value)
    }
}
