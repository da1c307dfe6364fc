import AuthLedger
import Foundation

/// Key files of the Shared Signals transmitter, kept outside the log like the
/// other keys: mode 0600 in a 0700 directory, each written once and never changed.
///
/// A new file is created crash-safe: written to a temporary name (0600, exclusive),
/// fsync'ed, hard-linked to its final name (which fails rather than replace an
/// existing file, so two processes creating the same key cannot both win), the
/// temporary name removed, and the directory fsync'ed so the new name is durable.
/// A crash at any point leaves either no key file or a complete one.
enum SSFKeyFile {
    /// Creates `dir` (0700) when missing.
    static func ensureDirectory(_ dir: String) throws {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: dir, isDirectory: &isDir) {
            guard isDir.boolValue else { throw LedgerError(.configurationError, "the shared signals key path is not a directory") }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw LedgerError(.configurationError, "cannot create the shared signals key directory")
        }
    }

    /// Writes `bytes` to `dir/name` as described above. Returns false when the name
    /// already exists (someone else created it first); throws on any other failure.
    @discardableResult
    static func create(dir: String, name: String, bytes: [UInt8]) throws -> Bool {
        let final = (dir as NSString).appendingPathComponent(name)
        let temp = (dir as NSString).appendingPathComponent(".\(name).\(UUID().uuidString).tmp")
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw LedgerError(.configurationError, "cannot create a shared signals key file (\(String(cString: strerror(errno)))): check the key directory's owner and mode") }
        defer { unlink(temp) }
        var ok = true
        bytes.withUnsafeBytes { b in
            var offset = 0
            while offset < b.count {
                let n = write(fd, b.baseAddress! + offset, b.count - offset)
                if n <= 0 { ok = false; return }
                offset += n
            }
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok else { throw LedgerError(.storageError, "cannot write a shared signals key file") }
        if link(temp, final) != 0 {
            if errno == EEXIST { return false }
            throw LedgerError(.storageError, "cannot link a shared signals key file")
        }
        syncDirectory(dir)
        return true
    }

    /// fsync of the directory, so that a new or removed name survives a crash.
    static func syncDirectory(_ dir: String) {
        let d = open(dir, O_RDONLY)
        if d >= 0 {
            _ = fsync(d)
            close(d)
        }
    }

    /// The contents of `dir/name`, or nil.
    static func read(dir: String, name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: (dir as NSString).appendingPathComponent(name)).map { Array($0) }
    }
}
