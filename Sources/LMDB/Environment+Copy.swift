import CLMDB
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension Environment {
    /// Writes a compacted copy of the store (`data.mdb`, no lock file) into `directory`,
    /// which must exist and be empty, while other transactions go on: the copy is the
    /// snapshot of one read transaction (`mdb_env_copy2` with `MDB_CP_COMPACT`, which
    /// takes no writer lock), so writers of this and every other process keep committing
    /// meanwhile. The copy is synced to disk before this returns.
    ///
    /// The map of this process stays where it is during the copy (the resize gate is held
    /// shared): a write of this process that needs the map to grow meanwhile waits for the
    /// copy's end. A backup from another process (`authledger backup`) holds back no writer.
    public func copyCompacted(to directory: String) throws {
        // A transaction first: it reopens the environment when the store was compacted
        // into a new file since it was opened, so the copy reads the store's current file.
        try read { _ in }
        gate.enterShared(writeTransaction: false)
        let rc = copyReleasingPages(to: directory)
        gate.leaveShared(writeTransaction: false)
        try LMDBError.check(rc, "env_copy2(backup)")
        try Environment.fsync(directory + "/data.mdb")
        try Environment.fsync(directory)
    }

    /// Flushes the file or directory `path` to disk (`fsync`).
    public static func fsyncFile(_ path: String) throws { try fsync(path) }

    /// `mdb_env_copy2(MDB_CP_COMPACT)` into `directory` on the calling thread, letting go of
    /// the map's pages as it reads them (it reads every live page through this process's
    /// map, which would otherwise pin the whole file in the resident set: 611 MB for the
    /// bench's store): a task releases them every 5 ms meanwhile, and never after the copy
    /// ended. The caller holds the resize gate, so the map stays where it is. Returns LMDB's
    /// result code.
    func copyReleasingPages(to directory: String) -> Int32 {
        let regions = mappedRegions()
        // Whether the copy still runs: the task releases pages only under this lock while it does.
        let copying = Copying()
        let releaser = Task.detached {
            while copying.running.withLock({ running in
                if running { Environment.release(regions) }
                return running
            }) {
                // It reads ~2 GB/s from the page cache: every 5 ms (the map does not move meanwhile).
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        let rc = mdb_env_copy2(env, directory, UInt32(MDB_CP_COMPACT))
        copying.running.withLock { running in
            running = false
            Environment.release(regions)
        }
        releaser.cancel()
        return rc
    }
}

/// Whether a copy still runs (`copyReleasingPages`), shared with its page releaser.
private final class Copying: Sendable {
    let running = Mutex(true)
}
