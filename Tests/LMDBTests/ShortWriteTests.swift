import AuthLedgerTestSupport
import Foundation
import Testing
@testable import LMDB

/// A disk that fills in the middle of a commit: LMDB's short write (`EIO`) on a file
/// system with no room left is told as the full disk it is (`ENOSPC`).
@Suite struct ShortWriteTests {
    @Test func aCommitCutShortByAFullDiskIsENOSPCAndTheEnvironmentRecovers() throws {
        let (mounted, reason) = SmallFilesystem.mount(megabytes: 8)
        guard let fs = mounted else {
            print("SKIPPED aCommitCutShortByAFullDiskIsENOSPCAndTheEnvironmentRecovers: \(reason)")
            return
        }
        defer { fs.unmount() }
        // Given an environment on an 8 MB file system, beside 2 MB of ballast
        let ballast = fs.path + "/ballast"
        #expect(FileManager.default.createFile(atPath: ballast, contents: Data(repeating: 0x5A, count: 2 << 20)))
        let env = try Environment(path: fs.path, initialMapSize: 1 << 26)
        let db = try env.database("t")
        let value = [UInt8](repeating: 7, count: 1000)
        func write(_ batch: Int) throws {
            try env.write { txn in
                for i in 0..<1000 { try txn.put(db, Array("b\(batch)-\(i)".utf8), value) }
            }
        }
        // When 1,000-value transactions (about 1 MB each) are committed until one fails
        var failure: LMDBError?
        var freeBefore = 0
        var committed = 0
        for batch in 0..<64 {
            freeBefore = env.freeBytes() ?? -1
            do {
                try write(batch)
                committed += 1
            } catch let e as LMDBError {
                failure = e
                break
            }
        }
        // Then the failing commit had room for part of its pages (it was cut short in the
        // middle), and its error is ENOSPC, not LMDB's EIO
        let e = try #require(failure, "eight megabytes never filled")
        #expect(freeBefore >= 64 * 1024, "the commit started with \(freeBefore) bytes free: not a failure in the middle")
        #expect(e.code == ENOSPC, "\(e)")
        // And reads go on; nothing of the failed transaction is there
        #expect(try env.read { try $0.count(db) } == committed * 1000)
        #expect(try env.read { try $0.get(db, Array("b\(committed)-0".utf8)) } == nil)
        // And once space is freed, the same transaction commits
        try FileManager.default.removeItem(atPath: ballast)
        try write(committed)
        #expect(try env.read { try $0.count(db) } == (committed + 1) * 1000)
    }

    @Test func anEIOWithRoomOnTheFileSystemStaysEIO() throws {
        // A failing device, not a full disk: the file system of a fresh temporary directory has room
        let dir = NSTemporaryDirectory() + "lmdb-eio-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let env = try Environment(path: dir)
        #expect((env.freeBytes() ?? 0) >= env.pageSize)
        #expect(env.commitFailure(EIO).code == EIO)
        #expect(env.commitFailure(ENOSPC).code == ENOSPC)
        #expect(env.commitFailure(EINVAL).code == EINVAL)
    }
}
