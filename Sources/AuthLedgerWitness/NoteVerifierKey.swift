import AuthLedger
import Crypto
import Foundation

/// A C2SP `signed-note` verifier key, `<name>+<hex key id>+<base64(type ‖ public key)>`:
/// a log's checkpoint key (type `0x01`, Ed25519 note signatures) or a witness's
/// cosigning key (type `0x04`, `cosignature/v1`). Parsing checks that the key id is the
/// one the name, type and key determine, so a line naming this key is recognised by
/// name and id together.
public struct NoteVerifierKey: Sendable, Hashable, CustomStringConvertible {
    /// Ed25519 note signatures (C2SP `signed-note`).
    public static let ed25519: UInt8 = 0x01
    /// Timestamped Ed25519 cosignatures (C2SP `tlog-cosignature`, `cosignature/v1`).
    public static let cosignatureV1: UInt8 = 0x04

    /// The key name: a log's origin, or the witness's name.
    public let name: String
    /// The signature type byte (`0x01` or `0x04`).
    public let type: UInt8
    /// The 32-byte Ed25519 public key.
    public let publicKey: [UInt8]
    /// `SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4]`, big-endian.
    public let keyID: UInt32

    /// The key `name` of `type` over the 32-byte Ed25519 `publicKey`.
    public init(name: String, type: UInt8, publicKey: [UInt8]) throws {
        guard publicKey.count == 32 else { throw NoteError("an Ed25519 public key is 32 bytes") }
        guard NoteVerifierKey.isKeyName(name) else { throw NoteError("a key name is non-empty, without white space or '+'") }
        self.name = name
        self.type = type
        self.publicKey = publicKey
        keyID = NoteVerifierKey.keyID(name: name, encodedKey: [type] + publicKey)
    }

    /// Parses `<name>+<8 hex digits>+<base64(type ‖ key)>`; only types `0x01` and `0x04` are known.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "+", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw NoteError("a verifier key is <name>+<hex key id>+<base64 key>") }
        let hex = parts[1]
        guard hex.count == 8, hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
              let id = UInt32(hex, radix: 16) else { throw NoteError("the key id of a verifier key is 8 lowercase hex digits") }
        guard let blob = Data(base64Encoded: String(parts[2])), blob.count == 33 else {
            throw NoteError("the key of a verifier key is base64 of a type byte and a 32-byte Ed25519 key")
        }
        let bytes = Array(blob)
        guard bytes[0] == NoteVerifierKey.ed25519 || bytes[0] == NoteVerifierKey.cosignatureV1 else {
            throw NoteError("unsupported verifier key type 0x\(String(bytes[0], radix: 16)) (0x01 Ed25519, 0x04 cosignature/v1)")
        }
        try self.init(name: String(parts[0]), type: bytes[0], publicKey: Array(bytes[1...]))
        guard keyID == id else { throw NoteError("the verifier key's id does not match its name and key") }
    }

    /// The key's text form, as parsed.
    public var description: String {
        let hex = String(keyID, radix: 16)
        return "\(name)+\(String(repeating: "0", count: 8 - hex.count))\(hex)+\(Data([type] + publicKey).base64EncodedString())"
    }

    /// `SHA-256(name ‖ "\n" ‖ encodedKey)[:4]` as a big-endian number.
    static func keyID(name: String, encodedKey: [UInt8]) -> UInt32 {
        let digest = Array(SHA256.hash(data: Array(name.utf8) + [UInt8(ascii: "\n")] + encodedKey))
        return digest.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Whether `name` is a signed-note key name: non-empty, no Unicode space, no `+`, no control character.
    static func isKeyName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 256
            && !name.unicodeScalars.contains { $0.properties.isWhitespace || $0 == "+" || $0.value < 0x20 || $0.value == 0x7F }
    }

    /// Whether `signature` (64 bytes) is this key's Ed25519 signature of `message`.
    func isValidSignature(_ signature: some DataProtocol, for message: some DataProtocol) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(signature, for: message)
    }
}
