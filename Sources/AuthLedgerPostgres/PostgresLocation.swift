import AuthLedgerCore
import Foundation

/// Where a PostgreSQL store lives, parsed from a `postgresql://` (or `postgres://`) URL:
///
///     postgresql://USER[:PASSWORD]@HOST[:PORT][/DATABASE][?sslmode=MODE&schema=NAME]
///
/// `sslmode` is `disable`, `prefer` (the default, as libpq's), `require` (both without
/// certificate checks, as libpq's) or `verify-full` (the server's certificate and name
/// are checked against the system's trust roots). `schema` names the PostgreSQL schema
/// that holds the ledger's tables (default `authledger`; created when missing), so one
/// database can hold several ledgers. The password is never part of `description`, and
/// no error or log line names more than `redacted`.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    /// How the connection uses TLS (`sslmode` of the URL): never, if offered, always, or always with the server's certificate and host name checked.
    public enum TLSMode: String, Sendable { case disable, prefer, require, verifyFull = "verify-full" }

    /// The database role.
    public var user: String
    /// The role's password, if the URL has one (never printed).
    public var password: String?
    /// The server's host name or address.
    public var host: String
    /// The server's port (5432 unless given).
    public var port: Int
    /// The database.
    public var database: String
    /// The schema holding this ledger's tables (one database can hold several ledgers).
    public var schema: String
    /// The TLS mode.
    public var tls: TLSMode

    /// Whether `store` names a PostgreSQL store rather than an LMDB directory.
    public static func isPostgres(_ store: String) -> Bool {
        store.hasPrefix("postgresql://") || store.hasPrefix("postgres://")
    }

    /// Parses a `postgresql://user[:password]@host[:port]/database[?schema=…&sslmode=…]` URL; an error never shows the password.
    public init(url: String) throws {
        // The message never repeats the URL: it may hold a password.
        func bad(_ why: String) -> LedgerError { LedgerError(.configurationError, "invalid PostgreSQL store URL: \(why)") }
        guard PostgresLocation.isPostgres(url), let c = URLComponents(string: url) else {
            throw bad("expected postgresql://USER[:PASSWORD]@HOST[:PORT][/DATABASE]")
        }
        guard let host = c.host, !host.isEmpty else { throw bad("no host") }
        guard let user = c.user, !user.isEmpty else { throw bad("no user") }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        // (`URLComponents` gives the user, the password and the path percent-decoded.)
        self.user = user
        self.password = c.password
        self.port = c.port ?? 5432
        guard (1...65535).contains(port) else { throw bad("port out of range") }
        let db = String(c.path.drop(while: { $0 == "/" }))
        self.database = db.isEmpty ? user : db
        schema = "authledger"
        tls = .prefer
        for item in c.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let v = item.value, let mode = TLSMode(rawValue: v) else {
                    throw bad("sslmode must be disable, prefer, require or verify-full")
                }
                tls = mode
            case "schema":
                guard let v = item.value, PostgresLocation.isPlainIdentifier(v) else {
                    throw bad("schema must be 1 to 63 of a-z, 0-9 and _, not starting with a digit")
                }
                schema = v
            default:
                throw bad("unknown parameter \(PostgresLocation.isPlainIdentifier(item.name) ? item.name : "?") (known: sslmode, schema)")
            }
        }
    }

    /// The schema name is put into SQL text (identifiers cannot be bound): only plain
    /// lower-case identifiers are accepted, so quoting is never needed.
    static func isPlainIdentifier(_ s: String) -> Bool {
        guard let first = s.utf8.first, (1...63).contains(s.utf8.count) else { return false }
        guard first == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else { return false }
        return s.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The URL without its password: safe for logs, banners and messages.
    public var redacted: String {
        let h = host.contains(":") ? "[\(host)]" : host
        var s = "postgresql://\(user)\(password == nil ? "" : ":***")@\(h):\(port)/\(database)"
        var q: [String] = []
        if schema != "authledger" { q.append("schema=\(schema)") }
        if tls != .prefer { q.append("sslmode=\(tls.rawValue)") }
        if !q.isEmpty { s += "?" + q.joined(separator: "&") }
        return s
    }

    /// The location without its password.
    public var description: String { redacted }

    /// A store name for messages: a PostgreSQL URL without its password, a path as it is.
    public static func displayName(_ store: String) -> String {
        guard isPostgres(store) else { return store }
        return (try? PostgresLocation(url: store).redacted) ?? "postgresql://(invalid URL)"
    }
}
