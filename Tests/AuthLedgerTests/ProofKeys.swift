import AuthLedger
import AuthLedgerLMDB
import Crypto
import Foundation

/// A device's key pair for tests (swift-crypto), as a client authenticator would hold it:
/// its public JWK and compact JWS signatures (RFC 7515) in ES256 or EdDSA.
struct ProofKey {
    enum Kind { case es256, edDSA }
    let kind: Kind
    private let p256: P256.Signing.PrivateKey?
    private let ed: Curve25519.Signing.PrivateKey?

    init(_ kind: Kind) {
        self.kind = kind
        p256 = kind == .es256 ? P256.Signing.PrivateKey() : nil
        ed = kind == .edDSA ? Curve25519.Signing.PrivateKey() : nil
    }

    var alg: String { kind == .es256 ? "ES256" : "EdDSA" }

    /// The public JWK's members.
    var jwk: StringMap {
        if let p256 {
            let raw = Array(p256.publicKey.x963Representation)
            return StringMap([("kty", "EC"), ("crv", "P-256"), ("x", Base64URL.encode(Array(raw[1..<33]))), ("y", Base64URL.encode(Array(raw[33..<65])))])
        }
        return StringMap([("kty", "OKP"), ("crv", "Ed25519"), ("x", Base64URL.encode(Array(ed!.publicKey.rawRepresentation)))])
    }

    /// The public JWK as JSON text (the CLI's `--public-key`).
    var jwkText: String { jwk.json.serialized() }

    /// The RFC 7638 thumbprint, computed here from the members written out by hand.
    var thumbprint: String {
        let j = jwk
        let text = kind == .es256
            ? #"{"crv":"P-256","kty":"EC","x":"\#(j["x"]!)","y":"\#(j["y"]!)"}"#
            : #"{"crv":"Ed25519","kty":"OKP","x":"\#(j["x"]!)"}"#
        return Base64URL.encode(Array(SHA256.hash(data: Array(text.utf8))))
    }

    /// A compact JWS over `payload` with header `{"alg": …}` (or `header` as given).
    func sign(_ payload: [UInt8], header: String? = nil) -> String {
        let h = Base64URL.encode(Array((header ?? #"{"alg":"\#(alg)"}"#).utf8))
        let input = h + "." + Base64URL.encode(payload)
        let sig: [UInt8] = if let p256 {
            Array(try! p256.signature(for: Array(input.utf8)).rawRepresentation)
        } else {
            Array(try! ed!.signature(for: Array(input.utf8)))
        }
        return input + "." + Base64URL.encode(sig)
    }

    /// The signature of an answer to a challenge (the JCS payload of the reference, section 11).
    func answer(user: String, challengeId: String, decision: String, deviceId: String, nonce: String, userVerified: Bool = false) -> String {
        var text = #"{"challengeId":"\#(challengeId)","decision":"\#(decision)","deviceId":"\#(deviceId)","nonce":"\#(nonce)","user":"\#(user)""#
        if userVerified { text += #","userVerified":true"# }
        return sign(Array((text + "}").utf8))
    }
}
