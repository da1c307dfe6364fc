import LMDB
import Synchronization

/// After writes: once the store grew by `growth` bytes, or `commits` transactions were
/// committed, since the last time, this process lets go of every page of the map it
/// holds (`Environment.releaseMappedPages`). Appending a million events otherwise leaves
/// ~400 MB of the file resident in the process; with it, the file-backed part stays
/// under `growth` plus what the latest commits touched.
final class MapPagesRelease: Sendable {
    private struct Since { var size = 0, commits = 0 }
    private let since = Mutex(Since())
    static let growth = 64 << 20
    static let commits = 8_192

    func committed(_ environment: Environment) {
        let size = environment.usedSize
        let due = since.withLock { s -> Bool in
            s.commits += 1
            guard size - s.size >= Self.growth || s.commits >= Self.commits else { return false }
            s = Since(size: size, commits: 0)
            return true
        }
        if due { environment.releaseMappedPages() }
    }
}
