import AuthLedgerCore
import Crypto
import Foundation
import Testing
@testable import AuthLedgerWitness

/// `cosignature/v1` against the byte layout of C2SP tlog-cosignature, computed here step by
/// step with swift-crypto primitives (never with the code under test): the key is RFC 8032's
/// test 1 key, whose public key the RFC prints.
@Suite struct CosignerTests {
    static let seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    static let rfcPublicKey = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
    static let root = [UInt8](repeating: 0xAB, count: 32)
    static let text = "example.com/log\n5\n\(Data(root).base64EncodedString())\n"

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    @Test func keyIDAndVerifierKeyFollowTheSpec() throws {
        let c = try Cosigner(name: "witness.example/w1", seed: Self.seed)
        #expect(c.verifierKey.publicKey == Self.rfcPublicKey)
        // key id = SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]
        let digest = Array(SHA256.hash(data: Array("witness.example/w1".utf8) + [0x0A, 0x04] + Self.rfcPublicKey))
        let idHex = digest.prefix(4).map { String(format: "%02x", $0) }.joined()
        let expected = "witness.example/w1+\(idHex)+\(Data([0x04] + Self.rfcPublicKey).base64EncodedString())"
        #expect(c.verifierKey.description == expected)
        #expect(try NoteVerifierKey(parsing: expected) == c.verifierKey)
        // The same key as a note (0x01) key has another id: the type byte is hashed.
        let noteID = Array(SHA256.hash(data: Array("witness.example/w1".utf8) + [0x0A, 0x01] + Self.rfcPublicKey)).prefix(4)
        #expect(Array(digest.prefix(4)) != Array(noteID))
    }

    @Test func signatureLineIsKeyIDTimeAndSignatureOverTheSpecMessage() throws {
        let c = try Cosigner(name: "witness.example/w1", seed: Self.seed)
        let time: UInt64 = 1_679_315_147
        let line = try c.cosign(text: Self.text, time: time)
        // The message: "cosignature/v1\n", "time <T>\n", then the checkpoint text.
        let message = Array("cosignature/v1\ntime 1679315147\nexample.com/log\n5\n".utf8) + Array(Data(Self.root).base64EncodedString().utf8) + [0x0A]
        let key = try Curve25519.Signing.PrivateKey(rawRepresentation: Self.seed)
        let digest = Array(SHA256.hash(data: Array("witness.example/w1".utf8) + [0x0A, 0x04] + Self.rfcPublicKey))
        let timeBytes: [UInt8] = [0, 0, 0, 0, 0x64, 0x18, 0x50, 0xCB]  // 1679315147 = 0x641850CB
        // Ed25519 (RFC 8032) is deterministic: the signature of the message by this key is one value.
        let signature = Array(try key.signature(for: message))
        let expected = "\u{2014} witness.example/w1 " + Data(Array(digest.prefix(4)) + timeBytes + signature).base64EncodedString() + "\n"
        #expect(line == expected)
        #expect(key.publicKey.isValidSignature(signature, for: message))
    }

    @Test func verifyAcceptsTheLineAndRefusesAnyChange() throws {
        let c = try Cosigner(name: "witness.example/w1", seed: Self.seed)
        let line = try c.cosign(text: Self.text, time: 42)
        let sig = try SignedNote.signature(String(line.dropLast()))
        #expect(Cosigner.verify(sig, text: Self.text, key: c.verifierKey) == 42)
        #expect(Cosigner.verify(sig, text: Self.text.replacingOccurrences(of: "\n5\n", with: "\n6\n"), key: c.verifierKey) == nil)
        // Another time in the blob: the signature no longer covers it.
        var bytes = sig.bytes
        bytes[7] ^= 1
        let moved = SignedNote.Signature(name: sig.name, keyID: sig.keyID, bytes: bytes, line: sig.line)
        #expect(Cosigner.verify(moved, text: Self.text, key: c.verifierKey) == nil)
        // The same public key as an Ed25519 note key (type 0x01) is another key.
        let asNoteKey = try NoteVerifierKey(name: "witness.example/w1", type: 0x01, publicKey: Self.rfcPublicKey)
        #expect(Cosigner.verify(sig, text: Self.text, key: asNoteKey) == nil)
        let other = try Cosigner(name: "witness.example/w2", seed: Self.seed)
        #expect(Cosigner.verify(sig, text: Self.text, key: other.verifierKey) == nil)
    }

    @Test func verifierKeyParsingRefusesBadKeys() throws {
        let good = try Cosigner(name: "w", seed: Self.seed).verifierKey.description
        let parts = good.split(separator: "+").map(String.init)
        for bad in ["w", "w+\(parts[1])", "w+00000000+\(parts[2])", "w+\(parts[1].uppercased())+\(parts[2])",
                    "w+\(parts[1])+!!!", "x+\(parts[1])+\(parts[2])", "w+\(parts[1])+\(Data([0x09] + Self.rfcPublicKey).base64EncodedString())"] {
            #expect(throws: NoteError.self) { try NoteVerifierKey(parsing: bad) }
        }
    }

    @Test func keyFileIsCreatedOnceWithMode0600AndKeepsItsName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cosigner-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/witness.key"
        #expect(throws: NoteError.self) { try CosignerKeyFile.load(path: path, name: nil) }
        let a = try CosignerKeyFile.load(path: path, name: "w.example/1")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let b = try CosignerKeyFile.load(path: path, name: nil)
        #expect(a.verifierKey == b.verifierKey && b.name == "w.example/1")
        #expect(throws: NoteError.self) { try CosignerKeyFile.load(path: path, name: "another") }
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: NoteError.self) { try CosignerKeyFile.load(path: path, name: nil) }
    }
}
