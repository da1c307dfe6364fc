import Foundation

/// A real, small filesystem for full-disk tests: a tmpfs of `megabytes` mounted on a
/// fresh directory (needs root, as on CI). nil when mounting is impossible here; the
/// caller then skips with the reason.
public final class SmallFilesystem {
    public let path: String

    private init(path: String) { self.path = path }

    public static func mount(megabytes: Int) -> (filesystem: SmallFilesystem?, reason: String) {
        let dir = NSTemporaryDirectory() + "authledger-tmpfs-" + UUID().uuidString
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        } catch {
            return (nil, "cannot create a mount point: \(error)")
        }
        let status = run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", dir])
        guard status == 0 else {
            try? FileManager.default.removeItem(atPath: dir)
            return (nil, "mounting a tmpfs failed (exit \(status); not root, or no mount permission in this container)")
        }
        return (SmallFilesystem(path: dir), "")
    }

    /// Fills the filesystem until writing fails (ENOSPC); the file is `path`/filler.
    public func fill() {
        let fd = open(path + "/filler", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let block = [UInt8](repeating: 0xA5, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        var small = [UInt8](repeating: 1, count: 1)
        while write(fd, &small, 1) > 0 {}
    }

    /// Frees what `fill()` took.
    public func free() { unlink(path + "/filler") }

    public func unmount() {
        _ = SmallFilesystem.run("/bin/umount", ["-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    @discardableResult
    static func run(_ tool: String, _ args: [String]) -> Int32 {
        guard FileManager.default.isExecutableFile(atPath: tool) else { return 127 }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return 126 }
        p.waitUntilExit()
        return p.terminationStatus
    }
}
