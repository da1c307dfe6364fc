import AuthLedgerCore
import Crypto
import Foundation

/// Signs checkpoints (C2SP `tlog-checkpoint`) as C2SP `signed-note`s with Ed25519 — the
/// format of Go's `golang.org/x/mod/sumdb/note`:
///
/// ```
/// <origin>
/// <size>
/// <base64 root>
///
/// — <origin> <base64(4-byte key id ‖ 64-byte signature)>
/// ```
///
/// The key name is the origin; the key id is the first 4 bytes of
/// `SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key)`, and the verifier key
/// `<name>+<8 hex digits key id>+<base64(0x01 ‖ public key)>`. A note may carry more
/// signature lines after ours (witness cosignatures); verifiers skip the ones they
/// do not know.
public struct CheckpointSigner: Sendable {
    /// The origin when none is configured; operators are told to set their own.
    public static let defaultOrigin = "authledger.example/log"
    /// The signature algorithm byte of Ed25519 in signed notes.
    static let ed25519: UInt8 = 0x01

    /// The log's origin: the first line of each checkpoint and the key's name.
    public let origin: String
    let key: Curve25519.Signing.PrivateKey

    /// A signer for `origin` with the Ed25519 private key of the 32-byte `seed`. Throws `invalid_event` for an
    /// origin that is empty, over 256 bytes, or has white space, a control character or `+`; swift-crypto's
    /// error for a seed that is not 32 bytes.
    public init(origin: String, seed: [UInt8]) throws {
        try CheckpointSigner.checkOrigin(origin)
        self.origin = origin
        key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
    }

    /// `0x01 ‖ public key`: the encoded verifier public key.
    var encodedPublicKey: [UInt8] { [CheckpointSigner.ed25519] + Array(key.publicKey.rawRepresentation) }

    /// The key id: the first 4 bytes of SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key), big-endian.
    public var keyID: UInt32 {
        var sha = SHA256()
        sha.update(data: Array(origin.utf8) + [10] + encodedPublicKey)
        return Array(sha.finalize()).prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// `<name>+<hex key id>+<base64(0x01 ‖ public key)>` (`note.NewVerifier` takes it).
    public var verifierKey: String {
        let id = String(keyID, radix: 16)
        return "\(origin)+\(String(repeating: "0", count: 8 - id.count) + id)+\(Data(encodedPublicKey).base64EncodedString())"
    }

    /// The checkpoint body: origin, size and base64 root, each on its own line.
    public func body(size: UInt64, root: Hash32) -> String {
        "\(origin)\n\(size)\n\(Data(root.bytes).base64EncodedString())\n"
    }

    /// The signed note of the checkpoint of `size` with `root`.
    public func sign(size: UInt64, root: Hash32) throws -> String {
        try signNote(body(size: size, root: root))
    }

    /// `text` (lines ending in a newline) followed by a blank line and our signature line.
    public func signNote(_ text: String) throws -> String {
        let signature = try key.signature(for: Array(text.utf8))
        let id = keyID
        let blob = [UInt8(id >> 24), UInt8(id >> 16 & 0xFF), UInt8(id >> 8 & 0xFF), UInt8(id & 0xFF)] + Array(signature)
        return text + "\n" + "\u{2014} \(origin) \(Data(blob).base64EncodedString())\n"
    }

    /// An origin is a key name: non-empty, UTF-8, no white space, no `+`, no control
    /// characters (signed-note key names; tlog-checkpoint asks for a schema-less URL).
    public static func checkOrigin(_ origin: String) throws {
        guard !origin.isEmpty, origin.utf8.count <= 256,
              !origin.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0 == "+" || $0.value < 0x20 || $0.value == 0x7F || (0x80...0x9F).contains($0.value) })
        else {
            throw LedgerError.invalid("the origin must be 1–256 bytes without white space, control characters or '+' (e.g. example.com/authledger)", field: "origin")
        }
    }

    // MARK: The key file

    /// Loads the Ed25519 seed at `path`, creating it (32 random bytes, mode 0600) when
    /// missing. Creation is crash-safe and race-free: the key is written and synced in a
    /// temporary file, hard-linked into place (which fails if another process won the
    /// race, whose key is then used), and the directory synced.
    public static func loadOrCreateSeed(path: String) throws -> [UInt8] {
        if let seed = try readSeed(path) { return seed }
        var seed = [UInt8](repeating: 0, count: 32)
        var g = SystemRandomNumberGenerator()
        for k in 0..<32 { seed[k] = UInt8.random(in: 0...255, using: &g) }
        let dir = (path as NSString).deletingLastPathComponent
        let temp = (dir.isEmpty ? "." : dir) + "/.checkpoint-key-\(UInt64.random(in: 0...UInt64.max, using: &g)).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        // A directory that is missing or not writable is the setup's mistake (configuration_error).
        guard fd >= 0 else { throw LedgerError(.configurationError, "cannot create the checkpoint key file (\(String(cString: strerror(errno)))): check that its directory exists and is writable") }
        defer { unlink(temp) }
        let written = seed.withUnsafeBytes { write(fd, $0.baseAddress, 32) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == 32, synced else { throw LedgerError(.storageError, "cannot write the checkpoint key file") }
        if link(temp, path) != 0 {
            if errno == EEXIST, let theirs = try readSeed(path) { return theirs }
            throw LedgerError(.configurationError, "cannot create the checkpoint key file (\(String(cString: strerror(errno)))): is the path a directory, or unreadable?")
        }
        let dfd = open(dir.isEmpty ? "." : dir, O_RDONLY)
        if dfd >= 0 { _ = fsync(dfd); close(dfd) }
        return seed
    }

    private static func readSeed(_ path: String) throws -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard data.count == 32 else { throw LedgerError(.configurationError, "the checkpoint key file does not hold a 32-byte Ed25519 key") }
        return Array(data)
    }
}

extension Ledger {
    /// The checkpoint signer: key from the configured checkpoint key file, else
    /// `checkpoint.key` in the key directory (created on first use); origin `origin`, else
    /// the configured one, else the default (which operators should change).
    public func checkpointSigner(origin: String? = nil) throws -> CheckpointSigner {
        guard let path = configuration.effectiveCheckpointKeyFile else {
            throw LedgerError(.configurationError, "no checkpoint key configured (a key directory or a checkpoint key file)")
        }
        return try CheckpointSigner(origin: origin ?? configuration.effectiveOrigin, seed: CheckpointSigner.loadOrCreateSeed(path: path))
    }

    /// The signed checkpoint of the tree of `size` events (default the head).
    public func checkpoint(size: UInt64? = nil, signer: CheckpointSigner) async throws -> String {
        let (n, root) = try await treeHead(size: size)
        return try signer.sign(size: n, root: root)
    }

}
