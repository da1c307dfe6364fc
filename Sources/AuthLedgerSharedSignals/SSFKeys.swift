import AuthLedger
import Crypto
import CryptoExtras
import Foundation
import JWTKit
import Synchronization

/// The transmitter's signing keys: RS256 (RSA 2048 bits), one PEM file per key in
/// the key directory (`ssf-keys` in the store directory unless configured),
/// named `rs256-<created, ms since 1970>-<kid>.pem`, created on first use.
///
/// The newest key signs. Rotation adds a new key; the keys it replaced stay in the
/// JWKS for `retention` after their successor was created, so a receiver that cached
/// the JWKS, or holds a SET signed just before, still verifies it; after that their
/// files are removed by the next rotation. The `kid` is the key's RFC 7638 thumbprint.
///
/// Signing is jwt-kit's (`JWTKeyCollection`, RS256, PKCS #1 v1.5 over SHA-256): a
/// small pool of collections, so that SETs are signed on several cores at once.
public final class SSFKeys: Sendable {
    /// One signing key.
    public struct Key: Sendable {
        /// Its `kid`: the RFC 7638 thumbprint of its public key.
        public let kid: String
        /// When it was created, in Unix seconds.
        public let created: Int64
        let privateKey: JWTKit.Insecure.RSA.PrivateKey
        let file: String
        /// `n` and `e`, base64url.
        let modulus: String, exponent: String
    }

    /// The directory holding the key files (mode 0600).
    public let directory: String
    /// How long a replaced key stays published.
    public let retention: Duration
    private struct State {
        /// Oldest first.
        var keys: [Key] = []
        /// The kids each collection of the pool holds.
        var loaded = [Set<String>](repeating: [], count: SSFKeys.poolSize)
        /// The pool's round-robin cursor.
        var next = 0
        var lastLoad = ContinuousClock.now
        /// The key files at the last load.
        var listing: [String] = []
    }
    private let state = Mutex(State())
    /// Collections that sign (each an actor: one signature at a time).
    private let pool: [JWTKeyCollection] = (0..<SSFKeys.poolSize).map { _ in JWTKeyCollection() }
    static let poolSize = max(2, ProcessInfo.processInfo.activeProcessorCount)

    /// Loads the keys in `directory`, creating the directory and a first key when missing.
    public init(directory: String, retention: Duration = .seconds(7 * 86_400)) throws {
        self.directory = directory
        self.retention = retention
        try SSFKeyFile.ensureDirectory(directory)
        try reload()
        if state.withLock({ $0.keys.isEmpty }) {
            _ = try addKey()
            try reload()
        }
        guard !state.withLock({ $0.keys.isEmpty }) else { throw LedgerError(.storageError, "no shared signals signing key") }
    }

    /// The default key directory of a store: `ssf-keys` in the directory of the files beside the log.
    public static func defaultDirectory(storePath: String?) -> String? {
        return storePath.map { ($0 as NSString).appendingPathComponent("ssf-keys") }
    }

    /// The signing key.
    public var current: Key {
        refreshIfChanged()
        return state.withLock { $0.keys.last! }
    }

    /// The published keys: the current one and those replaced less than `retention` ago.
    public var published: [Key] {
        refreshIfChanged()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let keep = retentionMilliseconds
        let keys = state.withLock { $0.keys }
        return keys.enumerated().filter { i, _ in i == keys.count - 1 || keys[i + 1].created + keep > now }.map(\.element)
    }

    private var retentionMilliseconds: Int64 {
        let c = retention.components
        return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
    }

    /// `{"keys": [...]}`: the published public keys as JWKs (RFC 7517), newest first.
    public var jwks: JSON {
        .object([("keys", .array(published.reversed().map { k in
            .object([("kty", .string("RSA")), ("use", .string("sig")), ("alg", .string("RS256")), ("kid", .string(k.kid)),
                     ("n", .string(k.modulus)), ("e", .string(k.exponent))])
        }))])
    }

    /// Adds a new signing key (the old ones stay published for `retention`) and
    /// removes the files of keys replaced more than `retention` ago. Returns the new kid.
    @discardableResult
    public func rotate() throws -> String {
        let kid = try addKey()
        try reload()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let keep = retentionMilliseconds
        let keys = state.withLock { $0.keys }
        let expired = keys.enumerated().filter { i, _ in i < keys.count - 1 && keys[i + 1].created + keep <= now }.map(\.element)
        for k in expired { unlink((directory as NSString).appendingPathComponent(k.file)) }
        if !expired.isEmpty {
            SSFKeyFile.syncDirectory(directory)
            try reload()
        }
        return kid
    }

    /// Signs `claims` as a SET: header `{"alg":"RS256","kid":…,"typ":"secevent+jwt"}`.
    public func sign(_ claims: JSON) async throws -> String {
        let (slot, key, loaded) = signer()
        let collection = pool[slot]
        if !loaded {
            await collection.add(rsa: key.privateKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: key.kid),
                                 serializer: SETSerializer())
            _ = state.withLock { $0.loaded[slot].insert(key.kid) }
        }
        var header = JWTHeader()
        header.typ = "secevent+jwt"
        return try await collection.sign(SETPayload(claims), kid: JWKIdentifier(string: key.kid), header: header)
    }

    // MARK: Files

    /// A slot of the pool (round robin), the current key, and whether the slot holds it.
    private func signer() -> (slot: Int, key: Key, loaded: Bool) {
        refreshIfChanged()
        return state.withLock { s in
            let slot = s.next % SSFKeys.poolSize
            s.next &+= 1
            let key = s.keys.last!
            return (slot, key, s.loaded[slot].contains(key.kid))
        }
    }

    /// Creates a key file; returns its kid.
    private func addKey() throws -> String {
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        } catch {
            throw LedgerError(.storageError, "cannot generate an RSA key")
        }
        let rsa = try JWTKit.Insecure.RSA.PrivateKey(backing: key)
        let (n, e) = try SSFKeys.components(rsa)
        let kid = SSFKeys.thumbprint(n: n, e: e)
        // Strictly after every existing key, whatever the clock says.
        let latest = state.withLock { $0.keys.last?.created ?? 0 }
        let created = max(Int64(Date().timeIntervalSince1970 * 1000), latest + 1)
        let name = "rs256-\(String(format: "%013lld", created))-\(kid).pem"
        try SSFKeyFile.create(dir: directory, name: name, bytes: Array(rsa.pemRepresentation.utf8))
        return kid
    }

    private func reload() throws {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix("rs256-") && $0.hasSuffix(".pem") }.sorted()
        var loaded: [Key] = []
        for name in names {
            let parts = name.dropLast(4).split(separator: "-", maxSplits: 2)
            guard parts.count == 3, let created = Int64(parts[1]),
                  let bytes = SSFKeyFile.read(dir: directory, name: name) else { continue }
            let rsa: JWTKit.Insecure.RSA.PrivateKey
            do {
                rsa = try JWTKit.Insecure.RSA.PrivateKey(pem: String(decoding: bytes, as: UTF8.self))
            } catch {
                throw LedgerError(.configurationError, "the shared signals key file \(name) is not an RSA private key of 2048 bits or more")
            }
            let (n, e) = try SSFKeys.components(rsa)
            loaded.append(Key(kid: SSFKeys.thumbprint(n: n, e: e), created: created, privateKey: rsa, file: name, modulus: n, exponent: e))
        }
        loaded.sort { $0.created < $1.created }
        guard let newest = loaded.last else {
            state.withLock { s in
                s.keys = []
                s.listing = names
                s.lastLoad = .now
            }
            return
        }
        _ = newest.kid
        state.withLock { s in
            s.keys = loaded
            s.listing = names
            s.lastLoad = .now
        }
    }

    /// Picks up a rotation made by another process (`authledger ssf-rotate-key`):
    /// the directory is listed again at most every two seconds.
    private func refreshIfChanged() {
        let due = state.withLock { ContinuousClock.now - $0.lastLoad > .seconds(2) }
        guard due else { return }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix("rs256-") && $0.hasSuffix(".pem") }.sorted()
        let changed = state.withLock { s in
            s.lastLoad = .now
            return names != s.listing
        }
        if changed, !names.isEmpty { try? reload() }
    }

    static func components(_ key: JWTKit.Insecure.RSA.PrivateKey) throws -> (n: String, e: String) {
        let (n, e) = try key.publicKey.getKeyPrimitives()
        return (base64url(Array(n)), base64url(Array(e)))
    }

    /// RFC 7638: SHA-256 over `{"e":…,"kty":"RSA","n":…}`, base64url.
    static func thumbprint(n: String, e: String) -> String {
        base64url(Array(SHA256.hash(data: Array("{\"e\":\"\(e)\",\"kty\":\"RSA\",\"n\":\"\(n)\"}".utf8))))
    }
}

func base64url(_ bytes: [UInt8]) -> String {
    var s = Data(bytes).base64EncodedString()
    s = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    while s.hasSuffix("=") { s.removeLast() }
    return s
}
