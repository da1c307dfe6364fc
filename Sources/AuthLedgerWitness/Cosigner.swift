import AuthLedger
import Crypto
import Foundation

/// A witness's cosigning key: C2SP `tlog-cosignature`, `cosignature/v1` (Ed25519 with a
/// timestamp). The signed message is `cosignature/v1\n`, `time <T>\n` and the whole
/// checkpoint text (extension lines included, signature lines not); the signature line
/// is `— <name> <base64(key id ‖ T as 8 bytes big-endian ‖ 64-byte signature)>`, the key
/// id `SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]`.
public struct Cosigner: Sendable {
    /// The witness's name (its verifier key's name, on every cosignature line).
    public let name: String
    let key: Curve25519.Signing.PrivateKey
    /// The verifier key others configure: `<name>+<hex key id>+<base64(0x04 ‖ public key)>`.
    public let verifierKey: NoteVerifierKey

    /// The cosigner `name` with the Ed25519 key of the 32-byte `seed`.
    public init(name: String, seed: [UInt8]) throws {
        guard seed.count == 32 else { throw NoteError("an Ed25519 seed is 32 bytes") }
        key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
        verifierKey = try NoteVerifierKey(name: name, type: NoteVerifierKey.cosignatureV1, publicKey: Array(key.publicKey.rawRepresentation))
        self.name = name
    }

    /// The message a `cosignature/v1` signs for the checkpoint `text` at `time`.
    public static func message(text: String, time: UInt64) -> [UInt8] {
        Array("cosignature/v1\ntime \(time)\n\(text)".utf8)
    }

    /// The cosignature line (newline included) of the checkpoint `text` at `time` (seconds since the epoch).
    public func cosign(text: String, time: UInt64) throws -> String {
        let signature = try key.signature(for: Cosigner.message(text: text, time: time))
        let id = verifierKey.keyID
        var blob = (0..<4).map { UInt8(truncatingIfNeeded: id >> (24 - 8 * $0)) }
        blob += (0..<8).map { UInt8(truncatingIfNeeded: time >> (56 - 8 * $0)) }
        blob += Array(signature)
        return "\u{2014} \(name) \(Data(blob).base64EncodedString())\n"
    }

    /// The timestamp of `signature` when it is a valid `cosignature/v1` of `key` (name,
    /// id and type matching) over the checkpoint `text`; nil otherwise.
    public static func verify(_ signature: SignedNote.Signature, text: String, key: NoteVerifierKey) -> UInt64? {
        guard key.type == NoteVerifierKey.cosignatureV1, signature.name == key.name, signature.keyID == key.keyID,
              signature.bytes.count == 72 else { return nil }
        let time = signature.bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard time <= UInt64(Int64.max),
              key.isValidSignature(signature.bytes[8...], for: message(text: text, time: time)) else { return nil }
        return time
    }
}
