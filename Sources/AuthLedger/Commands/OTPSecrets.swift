import AuthLedgerCore
import Crypto
import Foundation

extension OTPSecrets {
    /// Loads the key file at `path`, creating it (32 random bytes, 0600) when missing.
    ///
    /// Creation is crash-safe: the key is written to a temporary file in the same
    /// directory, synced, linked into place (so the key file appears whole or not at
    /// all), and the directory synced. A key file shorter than 32 bytes can only be the
    /// leftover of an interrupted creation by an older version (no code was ever hashed
    /// under it: the creator died before using it), and is replaced. Concurrent
    /// creators (several processes on one store) are serialised by a lock on the directory, so they
    /// all end up with the one key.
    public static func loadOrCreate(path: String) throws -> OTPSecrets {
        if let key = try readKey(path) { return OTPSecrets(key: key) }
        // The directory is both the lock (flock) and what is synced once the key is in place.
        let dir = (path as NSString).deletingLastPathComponent
        let dirFD = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirFD >= 0 else { throw LedgerError(.configurationError, "cannot open the server key's directory (\(String(cString: strerror(errno))))") }
        defer { close(dirFD) }
        guard flock(dirFD, LOCK_EX) == 0 else { throw LedgerError(.storageError, "cannot lock the server key's directory") }
        defer { flock(dirFD, LOCK_UN) }
        // Another process may have created it while this one waited for the lock.
        if let key = try readKey(path) { return OTPSecrets(key: key) }

        var g = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
        let temp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max, using: &g))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LedgerError(.configurationError, "cannot create the server key file (\(String(cString: strerror(errno))))") }
        defer { unlink(temp) }
        let written = key.withUnsafeBytes { write(fd, $0.baseAddress, 32) }
        let synced = written == 32 && fsync(fd) == 0
        close(fd)
        guard synced else { throw LedgerError(.storageError, "cannot write the server key file") }
        // rename replaces a short leftover atomically; the lock keeps other creators out.
        guard rename(temp, path) == 0 else { throw LedgerError(.storageError, "cannot put the server key file in place") }
        guard fsync(dirFD) == 0 else { throw LedgerError(.storageError, "cannot sync the server key's directory") }
        return OTPSecrets(key: key)
    }

    /// The key in `path`, or nil when there is none yet (missing, or a short leftover).
    private static func readKey(_ path: String) throws -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return data.count >= 32 ? Array(data) : nil
    }

}

extension Ledger {
    /// The OTP secrets: the configured server key file, else `server.key` in the key directory.
    public func secrets() throws -> OTPSecrets {
        try cachedSecrets.withLock { cached in
            if let s = cached { return s }
            guard let path = configuration.effectiveServerKeyFile else {
                throw LedgerError(.configurationError, "no server key configured (a key directory or a server key file)")
            }
            let s = try OTPSecrets.loadOrCreate(path: path)
            cached = s
            return s
        }
    }
}
