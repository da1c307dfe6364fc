import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `compaction.lock` in the store directory: 8 bytes mapped shared by every process
/// (the compaction generation), and the file that `flock` serialises opening and
/// compacting on (each lock on its own open file description, so threads of one
/// process exclude each other too).
// @unchecked: a shared-memory counter (mmap of `compaction.lock`) read and written under flock, which the compiler cannot see.
final class StoreGeneration: @unchecked Sendable {
    let file: String
    private let fd: Int32
    private let map: UnsafeMutablePointer<UInt64>

    init(directory: String) throws {
        file = directory + "/compaction.lock"
        fd = Glibc.open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open compaction.lock") }
        var st = stat()
        if fstat(fd, &st) == 0 && st.st_size < 8 { _ = ftruncate(fd, 8) }
        guard let m = mmap(nil, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), m != UnsafeMutableRawPointer(bitPattern: -1) else {
            close(fd)
            throw LMDBError(code: errno, operation: "mmap compaction.lock")
        }
        map = m.assumingMemoryBound(to: UInt64.self)
    }

    deinit {
        munmap(map, 8)
        close(fd)
    }

    /// The current generation (an aligned 8-byte load: one instruction on 64-bit machines).
    var value: UInt64 { map.pointee }

    func bump() throws {
        map.pointee &+= 1
        guard msync(map, 8, MS_SYNC) == 0 else { throw LMDBError(code: errno, operation: "msync compaction.lock") }
    }

    func withLock<T>(_ operation: Int32, _ body: () throws -> T) throws -> T {
        let lfd = Glibc.open(file, O_RDWR | O_CLOEXEC)
        guard lfd >= 0 else { throw LMDBError(code: errno, operation: "open compaction.lock") }
        defer { close(lfd) }
        while flock(lfd, operation) != 0 {
            guard errno == EINTR else { throw LMDBError(code: errno, operation: "flock compaction.lock") }
        }
        return try body()
    }
}
