import Crypto

/// The server key that OTP codes are hashed under (HMAC-SHA-256). It lives outside
/// the log: in `server.key` (mode 0600) in the store directory, created on first use,
/// or another file the ledger's configuration names.
public struct OTPSecrets: Sendable {
    let key: SymmetricKey

    /// Secrets under `key`, which must be at least 32 bytes (a precondition).
    public init(key: [UInt8]) {
        precondition(key.count >= 32, "the server key must have at least 32 bytes")
        self.key = SymmetricKey(data: key)
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

    /// The six-digit code of `n` (0–999,999, drawn uniformly by the log: `OTPSecrets.newCode()` in AuthLedger).
    public static func code(_ n: Int) -> String {
        precondition((0..<1_000_000).contains(n), "an OTP code is six digits")
        let s = String(n)
        return String(repeating: "0", count: 6 - s.count) + s
    }

    /// Masks a delivery target so the log never holds it in clear:
    /// `alice@example.com` → `a***@example.com`, `+15551234567` → `*********67`.
    public static func mask(_ target: String, channel: String) throws -> String {
        // Spaces and tabs around the target are not part of it (the same set as Foundation's `.whitespaces`).
        let blank: (Character) -> Bool = { $0.unicodeScalars.allSatisfy { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator } }
        let t = String(target.drop(while: blank).reversed().drop(while: blank).reversed())
        if channel == "email" {
            // The "@" among the scalars: a combining mark after it makes one character of
            // the two, which must not hide it.
            let scalars = t.unicodeScalars
            guard let at = scalars.firstIndex(of: "@"), at != scalars.startIndex, scalars.index(after: at) != scalars.endIndex,
                  t.count <= 254, !EventDecoder.hasControl(t) else {
                throw LedgerError.invalid("target is not an email address", field: "target")
            }
            return String(t[t.startIndex]) + "***" + String(scalars[at...])
        }
        let digits = t.filter { $0.isNumber }
        guard digits.count >= 6, digits.count <= 20, t.allSatisfy({ $0.isNumber || $0 == "+" || $0 == " " || $0 == "-" }) else {
            throw LedgerError.invalid("target is not a phone number", field: "target")
        }
        return String(repeating: "*", count: digits.count - 2) + String(digits.suffix(2))
    }
}

