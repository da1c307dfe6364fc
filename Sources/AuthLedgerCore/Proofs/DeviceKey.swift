import Crypto

/// A device's public key, read from its JWK (RFC 7517): EC P-256 for ES256 or Ed25519 for
/// EdDSA (RFC 8037). Checked when read: the curve, the coordinates' lengths, the point being
/// on the curve (P-256 by swift-crypto; Ed25519 by ``Ed25519Point``, which also refuses the
/// small-order points), and no private or unknown member.
public struct DeviceKey: Equatable, Sendable {
    /// The JWS algorithm the key signs with.
    public enum Algorithm: String, Sendable {
        /// ECDSA on P-256 with SHA-256 (RFC 7518 section 3.4), signatures raw `r ‖ s`.
        case es256 = "ES256"
        /// Ed25519 (RFC 8037).
        case edDSA = "EdDSA"
    }

    /// The JWK as recorded.
    public let jwk: StringMap
    /// The algorithm it verifies.
    public let algorithm: Algorithm
    /// The RFC 7638 thumbprint: base64url SHA-256 of the JCS of the required members.
    public let thumbprint: String
    private let raw: [UInt8]

    /// Members a public JWK may carry besides the key itself.
    private static let optionalMembers: Set<String> = ["kid", "use", "alg"]

    /// Reads `jwk`; `invalid_event` (at `path`) for anything but a valid public P-256 or Ed25519 key.
    public init(jwk: StringMap, path: String = "publicKey") throws(LedgerError) {
        try self.init(jwk: jwk, path: path, checkPoint: true)
    }

    /// Reads a key the store recorded: checked as `init(jwk:path:)` but for the Ed25519
    /// point, which the rules checked when it was appended (a store written before that
    /// check may hold a key that is no point: `verify` names its event, and ``verifies(_:)``
    /// is false for any signature).
    package init(recorded jwk: StringMap) throws(LedgerError) {
        try self.init(jwk: jwk, path: "publicKey", checkPoint: false)
    }

    private init(jwk: StringMap, path: String, checkPoint: Bool) throws(LedgerError) {
        func bad(_ why: String) -> LedgerError { .invalid("\"\(path)\" \(why)", field: path) }
        let keys = jwk.pairs.map(\.key)
        guard Set(keys).count == keys.count else { throw bad("has a repeated member") }
        for k in keys where ["d", "p", "q", "dp", "dq", "qi", "oth", "k"].contains(k) {
            throw bad("has the private member \"\(k)\": give the public key only")
        }
        func coordinate(_ name: String) throws(LedgerError) -> [UInt8] {
            guard let s = jwk[name] else { throw bad("lacks \"\(name)\"") }
            guard let b = Base64URL.decode(s), b.count == 32 else { throw bad("member \"\(name)\" is not 32 bytes of base64url") }
            return b
        }
        let required: [String]
        switch (jwk["kty"], jwk["crv"]) {
        case ("EC", "P-256"):
            required = ["crv", "kty", "x", "y"]
            algorithm = .es256
            raw = [4] + (try coordinate("x")) + (try coordinate("y"))
            // swift-crypto refuses a point that is not on the curve.
            guard (try? P256.Signing.PublicKey(x963Representation: raw)) != nil else { throw bad("is not a point on P-256") }
        case ("OKP", "Ed25519"):
            required = ["crv", "kty", "x"]
            algorithm = .edDSA
            raw = try coordinate("x")
            if checkPoint, let problem = Ed25519Point.problem(raw) { throw bad("\(problem)") }
        default:
            throw bad("must be an EC P-256 or OKP Ed25519 public JWK")
        }
        for k in keys where !required.contains(k) && !Self.optionalMembers.contains(k) {
            throw bad("has the unknown member \"\(EventDecoder.clip(k))\"")
        }
        if let alg = jwk["alg"], alg != algorithm.rawValue { throw bad("says alg \(EventDecoder.clip(alg)), not \(algorithm.rawValue)") }
        self.jwk = jwk
        let members = required.map { ($0, JSON.string(jwk[$0]!)) }
        thumbprint = Base64URL.encode(Array(SHA256.hash(data: JSON.object(members).canonicalBytes())))
    }

    /// Equal when the JWKs are the same.
    public static func == (a: DeviceKey, b: DeviceKey) -> Bool { a.jwk == b.jwk }

    /// Whether `jws` is signed by this key with its algorithm (any other algorithm: false).
    public func verifies(_ jws: CompactJWS) -> Bool {
        guard jws.algorithm == algorithm else { return false }
        switch algorithm {
        case .es256:
            guard let key = try? P256.Signing.PublicKey(x963Representation: raw),
                  let sig = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature) else { return false }
            return key.isValidSignature(sig, for: jws.signingInput)
        case .edDSA:
            guard Ed25519Point.problem(raw) == nil, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
            return key.isValidSignature(jws.signature, for: jws.signingInput)
        }
    }
}
