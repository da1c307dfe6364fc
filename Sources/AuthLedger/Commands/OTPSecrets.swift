import Crypto
import Foundation

/// The server key that OTP codes are hashed under (HMAC-SHA-256). It lives outside
/// the log: in `server.key` (mode 0600) in the store directory, created on first use,
/// or given by configuration (`AUTHLEDGER_SERVER_KEY_FILE`).
public struct OTPSecrets: Sendable {
    let key: SymmetricKey

    /// Secrets under `key`, which must be at least 32 bytes (a precondition).
    public init(key: [UInt8]) {
        precondition(key.count >= 32, "the server key must have at least 32 bytes")
        self.key = SymmetricKey(data: key)
    }

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
        guard dirFD >= 0 else { throw LedgerError(.storageError, "cannot open the server key's directory (\(String(cString: strerror(errno))))") }
        defer { close(dirFD) }
        guard flock(dirFD, LOCK_EX) == 0 else { throw LedgerError(.storageError, "cannot lock the server key's directory") }
        defer { flock(dirFD, LOCK_UN) }
        // Another process may have created it while this one waited for the lock.
        if let key = try readKey(path) { return OTPSecrets(key: key) }

        var g = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
        let temp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max, using: &g))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LedgerError(.storageError, "cannot create the server key file (\(String(cString: strerror(errno))))") }
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

    /// HMAC-SHA-256 over user, OTP id and code, so a hash cannot be replayed for another OTP.
    public func codeHash(user: String, otpId: String, code: String) -> String {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array(user.utf8) + [0] + Array(otpId.utf8) + [0] + Array(code.utf8))
        return hexString(Array(mac.finalize()))
    }

    /// HMAC-SHA-256 of `bytes` under the server key, labelled by purpose (lower-case
    /// hex): an identifier derived from a secret (a token's digest) that can be stored
    /// without letting anyone who reads the store test guesses of that secret.
    public func keyedDigest(_ purpose: String, _ bytes: [UInt8]) -> String {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array(purpose.utf8) + [0] + bytes)
        return hexString(Array(mac.finalize()))
    }

    /// Constant-time comparison of the code's HMAC with the recorded one.
    public func matches(user: String, otpId: String, code: String, codeHash: String) -> Bool {
        let a = Array(self.codeHash(user: user, otpId: otpId, code: code).utf8)
        let b = Array(codeHash.utf8)
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    /// Six digits from the system CSPRNG, uniform.
    public static func newCode() -> String {
        var g = SystemRandomNumberGenerator()
        let n = Int.random(in: 0..<1_000_000, using: &g)
        let s = String(n)
        return String(repeating: "0", count: 6 - s.count) + s
    }

    /// Masks a delivery target so the log never holds it in clear:
    /// `alice@example.com` → `a***@example.com`, `+15551234567` → `*********67`.
    public static func mask(_ target: String, channel: String) throws -> String {
        let t = target.trimmingCharacters(in: .whitespaces)
        if channel == "email" {
            guard let at = t.firstIndex(of: "@"), at != t.startIndex, t.index(after: at) != t.endIndex,
                  t.count <= 254, !EventDecoder.hasControl(t) else {
                throw LedgerError.invalid("target is not an email address", field: "target")
            }
            return String(t[t.startIndex]) + "***" + String(t[at...])
        }
        let digits = t.filter { $0.isNumber }
        guard digits.count >= 6, digits.count <= 20, t.allSatisfy({ $0.isNumber || $0 == "+" || $0 == " " || $0 == "-" }) else {
            throw LedgerError.invalid("target is not a phone number", field: "target")
        }
        return String(repeating: "*", count: digits.count - 2) + String(digits.suffix(2))
    }
}

extension Ledger {
    /// The OTP secrets: from `AUTHLEDGER_SERVER_KEY_FILE`, else `server.key` in the store directory.
    public func secrets() throws -> OTPSecrets {
        secretsLock.lock()
        defer { secretsLock.unlock() }
        if let s = cachedSecrets { return s }
        let path: String
        if let configured = ProcessInfo.processInfo.environment["AUTHLEDGER_SERVER_KEY_FILE"], !configured.isEmpty {
            path = configured
        } else if let dir = self.path {
            path = (dir as NSString).appendingPathComponent("server.key")
        } else {
            throw LedgerError(.storageError, "no server key configured")
        }
        let s = try OTPSecrets.loadOrCreate(path: path)
        cachedSecrets = s
        return s
    }
}
