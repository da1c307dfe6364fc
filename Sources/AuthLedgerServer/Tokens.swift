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

/// The configured bearer tokens and their scopes.
///
/// Tokens are kept only as SHA-256 digests and compared in constant time: every
/// configured digest is compared in full on every request, so neither the position
/// nor the length of a match leaks through timing.
public struct TokenStore: Sendable {
    struct Entry: Sendable {
        var digest: [UInt8]
        var scopes: Set<Scope>
    }

    private var entries: [Entry] = []

    /// A store with no tokens.
    public init() {}

    /// Parses `token:scope+scope` entries separated by commas or new lines
    /// (`AUTHLEDGER_TOKENS="tokenA:read+audit,tokenB:write"`, or a `--tokens` file).
    /// Blank lines and lines starting with `#` are skipped.
    public init(parsing text: String) throws(TokenConfigurationError) {
        var lineNo = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNo += 1
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            for item in trimmed.split(separator: ",") {
                let entry = item.trimmingWhitespace()
                if entry.isEmpty { continue }
                guard let colon = entry.lastIndex(of: ":") else {
                    throw TokenConfigurationError("entry on line \(lineNo) is not token:scopes")
                }
                let token = String(entry[..<colon])
                guard !token.isEmpty, !token.contains(where: { $0.isWhitespace }) else {
                    throw TokenConfigurationError("empty token or white space in a token on line \(lineNo)")
                }
                var scopes = Set<Scope>()
                for name in entry[entry.index(after: colon)...].split(separator: "+") {
                    guard let s = Scope(rawValue: String(name)) else {
                        throw TokenConfigurationError("unknown scope \"\(name)\" on line \(lineNo) (read, write, audit, import, admin)")
                    }
                    scopes.insert(s)
                }
                guard !scopes.isEmpty else { throw TokenConfigurationError("a token without scopes on line \(lineNo)") }
                add(token: token, scopes: scopes)
            }
        }
    }

    /// Adds `token` with `scopes`; only its SHA-256 digest is kept. The same token added twice has both entries' scopes.
    public mutating func add(token: String, scopes: Set<Scope>) {
        entries.append(Entry(digest: Self.digest(token), scopes: scopes))
    }

    /// Whether no token is configured (the server then refuses to start without `insecureDev`).
    public var isEmpty: Bool { entries.isEmpty }
    /// How many tokens are configured.
    public var count: Int { entries.count }

    /// The scopes of `token` (admin expanded to every scope), or nil for an unknown token.
    public func scopes(of token: String) -> Set<Scope>? {
        identify(token)?.scopes
    }

    /// The caller `token` stands for (its digest: the key of its rate and stream limits)
    /// and its scopes, or nil for an unknown token.
    func identify(_ token: String) -> (caller: Caller, scopes: Set<Scope>)? {
        let d = Self.digest(token)
        var found: Set<Scope>?
        for e in entries {
            var diff: UInt8 = 0
            for k in 0..<32 { diff |= e.digest[k] ^ d[k] }
            if diff == 0 { found = found.map { $0.union(e.scopes) } ?? e.scopes }
        }
        guard let found else { return nil }
        return (Caller(digest: d), found.contains(.admin) ? Self.allScopes : found)
    }

    private static let allScopes = Set(Scope.allCases)

    static func digest(_ token: String) -> [UInt8] {
        var token = token
        return token.withUTF8 { Array(SHA256.hash(data: UnsafeRawBufferPointer($0))) }
    }
}

/// A `--tokens` file or `AUTHLEDGER_TOKENS` that cannot be used.
public struct TokenConfigurationError: Error, CustomStringConvertible, Sendable {
    /// What is wrong, naming the line; never the token itself.
    public var description: String
    init(_ d: String) { description = d }
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
