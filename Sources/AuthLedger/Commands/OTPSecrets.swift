import Crypto
import Foundation

/// The server key that OTP codes are hashed under (HMAC-SHA-256). It lives outside
/// the log: in `server.key` (mode 0600) in the store directory, created on first use,
/// or given by configuration (`AUTHLEDGER_SERVER_KEY_FILE`).
public struct OTPSecrets: @unchecked Sendable {
    let key: SymmetricKey

    public init(key: [UInt8]) {
        precondition(key.count >= 32, "the server key must have at least 32 bytes")
        self.key = SymmetricKey(data: key)
    }

    /// Loads the key file at `path`, creating it (32 random bytes, 0600) when missing.
    public static func loadOrCreate(path: String) throws -> OTPSecrets {
        let fm = FileManager.default
        if let data = fm.contents(atPath: path) {
            guard data.count >= 32 else { throw LedgerError(.storageError, "the server key file is shorter than 32 bytes") }
            return OTPSecrets(key: Array(data))
        }
        var g = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
        // Create exclusively with 0600 so a concurrent creator cannot leave two keys in use.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if fd < 0 {
            if errno == EEXIST, let data = fm.contents(atPath: path), data.count >= 32 { return OTPSecrets(key: Array(data)) }
            throw LedgerError(.storageError, "cannot create the server key file")
        }
        defer { close(fd) }
        let written = key.withUnsafeBytes { write(fd, $0.baseAddress, 32) }
        guard written == 32, fsync(fd) == 0 else { throw LedgerError(.storageError, "cannot write the server key file") }
        return OTPSecrets(key: key)
    }

    /// HMAC-SHA-256 over user, OTP id and code, so a hash cannot be replayed for another OTP.
    public func codeHash(user: String, otpId: String, code: String) -> String {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array(user.utf8) + [0] + Array(otpId.utf8) + [0] + Array(code.utf8))
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
