import AuthLedger
import Crypto

/// What a bearer token may do. `admin` implies every other scope.
///
/// - `read`: queries, the event stream, its own durable subscriptions
/// - `write`: commands (the rules decide which events follow)
/// - `audit`: export and verify
/// - `import`: raw events (`POST /v1/events`), which can carry any proof event: for
///   migrations and tests, not for services
/// - `admin`: everything, and policy, registration `via: admin`, erasure
public enum Scope: String, Sendable, CaseIterable, Comparable {
    /// The scopes, from the narrowest (see the type's note for what each allows).
    case read, write, audit, `import`, admin

    /// Orders scopes as `allCases` lists them: `read`, `write`, `audit`, `import`, `admin`.
    public static func < (a: Scope, b: Scope) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// The configured bearer tokens, their names and scopes, and the scopes of client
/// certificates (mTLS).
///
/// Tokens are kept only as SHA-256 digests and compared in constant time: every
/// configured digest is compared in full on every request, so neither the position
/// nor the length of a match leaks through timing.
///
/// Every token has a name: the events it appends carry `meta.caller` `token:<name>`. A
/// `NAME=TOKEN:SCOPES` entry names it; an old `TOKEN:SCOPES` entry gets
/// `unnamed-<8 hex digits>`, the start of a keyed SHA-256 of the token (stable across
/// restarts, and revealing nothing a guess of the token could be checked against
/// beyond 32 bits).
public struct TokenStore: Sendable {
    struct Entry: Sendable {
        var digest: [UInt8]
        var scopes: Set<Scope>
        var name: String
    }

    private var entries: [Entry] = []
    /// Client certificate identities (SAN URI, else DNS name) and their scopes.
    private var certificates: [String: Set<Scope>] = [:]

    /// A store with no tokens.
    public init() {}

    /// Parses entries separated by commas or new lines (`AUTHLEDGER_TOKENS`, or a `--tokens`
    /// file): `NAME=TOKEN:SCOPES`, the older `TOKEN:SCOPES`, and `cert=IDENTITY:SCOPES` for
    /// client certificates; scopes are joined by `+`. Blank lines and lines starting with
    /// `#` are skipped. A name is 1–64 of `A-Z a-z 0-9 . _ -`; a token holding `=` other
    /// than trailing base64 padding must be given with a name.
    public init(parsing text: String) throws(TokenConfigurationError) {
        var lineNo = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNo += 1
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            for item in trimmed.split(separator: ",") {
                let entry = item.trimmingWhitespace()
                if entry.isEmpty { continue }
                try parse(entry, line: lineNo)
            }
        }
    }

    private mutating func parse(_ entry: String, line lineNo: Int) throws(TokenConfigurationError) {
        guard let colon = entry.lastIndex(of: ":") else {
            throw TokenConfigurationError("entry on line \(lineNo) is not NAME=TOKEN:SCOPES, TOKEN:SCOPES or cert=IDENTITY:SCOPES")
        }
        var scopes = Set<Scope>()
        for name in entry[entry.index(after: colon)...].split(separator: "+") {
            guard let s = Scope(rawValue: String(name)) else {
                throw TokenConfigurationError("unknown scope \"\(name)\" on line \(lineNo) (read, write, audit, import, admin)")
            }
            scopes.insert(s)
        }
        guard !scopes.isEmpty else { throw TokenConfigurationError("an entry without scopes on line \(lineNo)") }
        let head = entry[..<colon]
        if head.hasPrefix("cert=") {
            let identity = String(head.dropFirst("cert=".count))
            guard Self.isValidIdentity(identity), !identity.contains(where: { $0.isWhitespace }) else {
                throw TokenConfigurationError("certificate identity on line \(lineNo) must be 1–128 characters without white space or control characters")
            }
            certificates[identity, default: []].formUnion(scopes)
            return
        }
        var name: String?
        var token = String(head)
        // `NAME=TOKEN`: a valid name before the first `=`, and a token after it that is not
        // the rest of a base64 padding (`abc==:read` is the token `abc==`).
        if let eq = head.firstIndex(of: "="), Self.isValidName(head[..<eq]) {
            let rest = head[head.index(after: eq)...]
            if let first = rest.first, first != "=" {
                name = String(head[..<eq])
                token = String(rest)
            }
        }
        guard !token.isEmpty, !token.contains(where: { $0.isWhitespace }) else {
            throw TokenConfigurationError("empty token or white space in a token on line \(lineNo)")
        }
        do {
            try add(token: token, scopes: scopes, name: name)
        } catch {
            throw TokenConfigurationError("\(error.description) (line \(lineNo))")
        }
    }

    /// Adds `token` with `scopes` under `name` (nil: its derived `unnamed-…` name); only its
    /// SHA-256 digest is kept. The same token added twice has both entries' scopes; a name
    /// may not stand for two tokens, nor one token have two names.
    public mutating func add(token: String, scopes: Set<Scope>, name: String? = nil) throws(TokenConfigurationError) {
        let digest = Self.digest(token)
        let name = name ?? Self.derivedName(token)
        guard Self.isValidName(Substring(name)), name != "cert" else {
            throw TokenConfigurationError("token name \"\(EventDecoder.clip(name))\" must be 1–64 of A-Z a-z 0-9 . _ - (and not cert)")
        }
        if let k = entries.firstIndex(where: { $0.digest == digest }) {
            guard entries[k].name == name else { throw TokenConfigurationError("one token is given two names (\(entries[k].name), \(name))") }
            entries[k].scopes.formUnion(scopes)
            return
        }
        guard !entries.contains(where: { $0.name == name }) else {
            throw TokenConfigurationError("the name \(name) is given to two tokens")
        }
        entries.append(Entry(digest: digest, scopes: scopes, name: name))
    }

    /// Whether no token and no certificate identity is configured (the server then refuses
    /// to start without `insecureDev`).
    public var isEmpty: Bool { entries.isEmpty && certificates.isEmpty }
    /// How many tokens are configured.
    public var count: Int { entries.count }
    /// The names of the configured tokens, in the order given.
    public var names: [String] { entries.map(\.name) }

    /// The scopes of `token` (admin expanded to every scope), or nil for an unknown token.
    public func scopes(of token: String) -> Set<Scope>? {
        identify(token)?.scopes
    }

    /// The name of `token` (`meta.caller` is `token:<name>`), or nil for an unknown token.
    public func name(of token: String) -> String? {
        identify(token)?.caller.name.map { String($0.dropFirst("token:".count)) }
    }

    /// The scopes of a client certificate whose identity (SAN URI, else DNS name) is
    /// `identity` (admin expanded), or nil when no `cert=` entry names it.
    public func scopes(ofCertificate identity: String) -> Set<Scope>? {
        certificates[identity].map(Self.expanded)
    }

    /// Whether some `cert=` entry is configured.
    public var hasCertificates: Bool { !certificates.isEmpty }

    /// The caller `token` stands for (its digest: the key of its rate and stream limits;
    /// its name) and its scopes, or nil for an unknown token.
    func identify(_ token: String) -> (caller: Caller, scopes: Set<Scope>)? {
        let d = Self.digest(token)
        var found: Entry?
        for e in entries {
            var diff: UInt8 = 0
            for k in 0..<32 { diff |= e.digest[k] ^ d[k] }
            if diff == 0 { found = e }
        }
        guard let found else { return nil }
        return (Caller(digest: d, name: "token:" + found.name), Self.expanded(found.scopes))
    }

    private static let allScopes = Set(Scope.allCases)

    static func expanded(_ scopes: Set<Scope>) -> Set<Scope> { scopes.contains(.admin) ? allScopes : scopes }

    static func digest(_ token: String) -> [UInt8] {
        var token = token
        return token.withUTF8 { Array(SHA256.hash(data: UnsafeRawBufferPointer($0))) }
    }

    /// `unnamed-` and the first 8 hex digits of HMAC-SHA-256 of the token under a fixed
    /// label: the name of an old-form entry.
    static func derivedName(_ token: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(token.utf8), using: SymmetricKey(data: Array("authledger token name".utf8)))
        return "unnamed-" + hexString(Array(mac).prefix(4))
    }

    /// 1–64 of `A-Z a-z 0-9 . _ -`.
    static func isValidName(_ s: Substring) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
        }
    }

    /// A caller name that fits `meta.caller` and `meta.actor` `service:<name>`: 1–128
    /// characters, no control characters.
    static func isValidIdentity(_ s: String) -> Bool {
        !s.isEmpty && s.count <= 128 && !EventDecoder.hasControl(s)
    }
}

/// A `--tokens` file or `AUTHLEDGER_TOKENS` that cannot be used.
public struct TokenConfigurationError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, naming the line; never the token itself.
    public var description: String
    /// An error saying `d` (never the token itself).
    public init(_ d: String) { description = d }
}

extension StringProtocol {
    /// The string without the white space (`Character.isWhitespace`) at its ends. Looks at
    /// the ends only and copies once: every authenticated request trims its token (a
    /// character-by-character rebuild through two reversed views was 15% of a read's CPU).
    package func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}
