import Foundation
import Synchronization

/// The one place the test targets make temporary directories (stores, key directories,
/// files): each is created 0700 under the system temporary directory and removed when the
/// test process exits, so a run leaves nothing behind (set AUTHLEDGER_KEEP_TEST_DIRS=1 to
/// keep them for a post-mortem).
public enum TemporaryDirectory {
    private static let made = Mutex<[String]>([])
    private static let registerCleanup: Void = {
        atexit {
            guard ProcessInfo.processInfo.environment["AUTHLEDGER_KEEP_TEST_DIRS"] != "1" else { return }
            for dir in TemporaryDirectory.made.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: dir) }
        }
    }()

    /// A new empty directory named `<prefix>-<uuid>`, removed at exit.
    public static func make(_ prefix: String = "authledger-test") -> String {
        let dir = path(prefix)
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return dir
    }

    /// A new path named `<prefix>-<uuid>` that does not exist yet (a store a test lets the
    /// ledger create, a file), removed at exit whatever is there by then.
    public static func path(_ prefix: String = "authledger-test") -> String {
        _ = registerCleanup
        let dir = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString
        made.withLock { $0.append(dir) }
        return dir
    }
}
