import AuthLedgerTestSupport
import Foundation
import Testing
@testable import LMDB

/// Failures LMDB reports: a full disk at commit, a full map, a file that is not an
/// environment, readers of dead processes, and map growth under long reads.
@Suite struct FailureTests {
    func tempDir() throws -> String {
        TemporaryDirectory.make("lmdb-failure")
    }

    @Test func aGarbageDataFileIsAnErrorNotADoubleClose() throws {
        // Given a directory whose data.mdb is not an LMDB file
        let dir = try tempDir()
        var g = SystemRandomNumberGenerator()
        let junk = (0..<65_536).map { _ in UInt8.random(in: 0...255, using: &g) }
        #expect(FileManager.default.createFile(atPath: dir + "/data.mdb", contents: Data(junk)))
        // Then opening it throws (it used to close the environment twice: SIGABRT)
        #expect(throws: LMDBError.self) { try Environment(path: dir) }
        #expect(throws: LMDBError.self) { try Environment(path: dir) }
    }

    @Test func aFailedCommitOnAFullDiskIsNotAbortedAgainAndTheEnvironmentRecovers() throws {
        let (mounted, reason) = SmallFilesystem.mount(megabytes: 2)
        guard let fs = mounted else {
            print("SKIPPED aFailedCommitOnAFullDiskIsNotAbortedAgainAndTheEnvironmentRecovers: \(reason)")
            return
        }
        defer { fs.unmount() }
        // Given an environment on a 2 MB filesystem with a first value committed
        let env = try Environment(path: fs.path, initialMapSize: 1 << 24)
        let db = try env.database("t")
        try env.write { try $0.put(db, Array("first".utf8), [1]) }
        // When the disk is full, commits fail with ENOSPC, again and again, without a crash
        fs.fill()
        let big = [UInt8](repeating: 7, count: 256 * 1024)
        for k in 0..<3 {
            do {
                try env.write { txn in try txn.put(db, Array("big\(k)".utf8), big) }
                Issue.record("a 256 KB write committed on a full disk")
            } catch let e as LMDBError {
                #expect(e.code == ENOSPC || e.isMapFull, "\(e)")
            }
        }
        // Then reads go on, nothing of the failed writes is there
        #expect(try env.read { try $0.get(db, Array("first".utf8)) } == [1])
        #expect(try env.read { try $0.get(db, Array("big0".utf8)) } == nil)
        // And once space is freed, writes work again
        fs.free()
        try env.write { txn in try txn.put(db, Array("big0".utf8), big) }
        #expect(try env.read { try $0.get(db, Array("big0".utf8)) }?.count == big.count)
    }

    @Test func aFullMapInANestedTransactionFailsTheWholeWriteCleanly() throws {
        // A map that cannot grow: the nested transaction fails with MDB_MAP_FULL
        let env = try Environment(path: try tempDir(), initialMapSize: 1 << 20, maxMapSize: 1 << 20)
        let db = try env.database("t")
        let big = [UInt8](repeating: 7, count: 64 * 1024)
        #expect(throws: LMDBError.self) {
            try env.write { txn in
                for k in 0..<64 {
                    let child = try txn.beginChild()
                    do {
                        try child.put(db, Array("k\(k)".utf8), big)
                    } catch {
                        child.abort()
                        throw error
                    }
                    try child.commit()
                }
            }
        }
        #expect(try env.read { try $0.count(db) } == 0)
        try env.write { try $0.put(db, Array("small".utf8), [1]) }
        #expect(try env.read { try $0.count(db) } == 1)
    }

    @Test func aMapAtItsMaximumRefusesInsteadOfGrowingForever() throws {
        let env = try Environment(path: try tempDir(), initialMapSize: 1 << 20, maxMapSize: 1 << 21)
        let db = try env.database("t")
        let value = [UInt8](repeating: 3, count: 4000)
        var refused: LMDBError?
        for batch in 0..<20 where refused == nil {
            do {
                try env.write { txn in
                    for i in 0..<100 { try txn.put(db, UInt64(batch * 100 + i).bigEndianBytes, value) }
                }
            } catch let e as LMDBError {
                refused = e
            }
        }
        #expect(refused?.isMapFull == true)
        #expect(env.mapSize == 1 << 21)
        // What was committed before stays readable
        #expect(try env.read { try $0.count(db) } > 0)
    }

    @Test func readersOfADeadProcessAreCleared() throws {
        // Given an environment this process keeps open, and another process (Python with
        // LMDB's C library, not our code) that died with a read transaction open on it
        let dir = try tempDir()
        let env = try Environment(path: dir)
        _ = try env.database("t")
        let script = """
        import ctypes, os, signal
        l = ctypes.CDLL("liblmdb.so.0")
        env = ctypes.c_void_p(); txn = ctypes.c_void_p()
        assert l.mdb_env_create(ctypes.byref(env)) == 0
        l.mdb_env_set_maxdbs(env, 16)
        assert l.mdb_env_open(env, \(String(reflecting: dir)).encode(), 0x200000, 0o600) == 0
        assert l.mdb_txn_begin(env, None, 0x20000, ctypes.byref(txn)) == 0
        os.kill(os.getpid(), signal.SIGKILL)
        """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script]
        try p.run()
        p.waitUntilExit()
        guard p.terminationReason == .uncaughtSignal else {
            print("SKIPPED readersOfADeadProcessAreCleared: python3 with liblmdb.so.0 is not available")
            return
        }
        // Its slot is still taken (nobody cleaned up after it)
        #expect(env.readerProcesses() == [p.processIdentifier])
        // When the readers are checked, the dead one's slot is cleared, once
        #expect(try env.checkReaders() == 1)
        #expect(env.readerProcesses().isEmpty)
        #expect(try env.checkReaders() == 0)
    }

    @Test func longOverlappingReadsDoNotStarveMapGrowth() throws {
        // Given readers that keep at least one read transaction open at every moment
        let env = try Environment(path: try tempDir(), initialMapSize: 1 << 20)
        let db = try env.database("t")
        let done = LockedFlag(), started = DispatchSemaphore(value: 0)
        let readers = 4, maxRounds = 20_000
        let finished = DispatchGroup()
        let rounds = LockedCounter()
        for r in 0..<readers {
            finished.enter()
            Thread {
                if r == 0 { started.signal() }
                var n = 0
                while !done.isSet && n < maxRounds {
                    _ = try? env.read { txn -> Int in
                        usleep(2000)
                        return try txn.count(db)
                    }
                    n += 1
                }
                rounds.add(n)
                finished.leave()
            }.start()
            usleep(500)
        }
        started.wait()
        usleep(20_000)
        // When a write needs the map to grow
        let value = [UInt8](repeating: 9, count: 4000)
        try env.write { txn in
            for i in 0..<600 { try txn.put(db, UInt64(i).bigEndianBytes, value) }
        }
        done.set()
        finished.wait()
        // Then the growth happened while the readers were still at it (a reader-preferring
        // lock made it wait until every reader had run all its rounds)
        #expect(env.mapSize > 1 << 20)
        #expect(rounds.value < readers * maxRounds)
    }
}

final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var total = 0
    func add(_ n: Int) { lock.withLock { total += n } }
    var value: Int { lock.withLock { total } }
}
