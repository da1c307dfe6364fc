import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// A commit that runs out of disk space part way through its writes. LMDB writes the
/// transaction's dirty pages with `pwritev`; when the file system fills in the middle of
/// one, the call writes what fits and returns a short count, and LMDB answers `EIO`
/// ("short write, filesystem full?", `mdb_page_flush`): the errno of the failed write
/// is never seen. A full disk is `ENOSPC` everywhere else, so a commit's `EIO` is told
/// as `ENOSPC` when the store's file system has, at that moment, less room than the
/// smallest write a commit makes (one page): the write fell short for want of space.
/// With room left, an `EIO` is a failing device, and stays `EIO`.
extension Environment {
    /// The error of a failed `mdb_txn_commit` that returned `rc`.
    func commitFailure(_ rc: Int32) -> LMDBError {
        if rc == EIO, let free = freeBytes(), free < pageSize {
            return LMDBError(code: ENOSPC, operation: "txn_commit (a short write: \(free) bytes left on the file system)")
        }
        return LMDBError(code: rc, operation: "txn_commit")
    }

    /// The bytes this process may still write on the store's file system (root may use
    /// the blocks reserved for it), or nil when `statvfs` fails.
    func freeBytes() -> Int? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        let blocks = geteuid() == 0 ? s.f_bfree : s.f_bavail
        return Int(clamping: UInt64(blocks) &* UInt64(s.f_frsize))
    }

    /// LMDB's page size, the unit of every write of a commit: the system's page size
    /// (LMDB's default, which this wrapper never changes).
    var pageSize: Int { sysconf(Int32(_SC_PAGESIZE)) }
}
