/// A JWS in compact serialization (RFC 7515 section 7.1), split and checked for shape only:
/// the protected header is a JSON object naming `alg` ES256 or EdDSA; signatures are
/// checked by ``DeviceKey/verifies(_:)``.
public struct CompactJWS: Sendable {
    /// The algorithm the protected header names.
    public let algorithm: DeviceKey.Algorithm
    /// The payload's bytes.
    public let payload: [UInt8]
    /// The signature's bytes (ES256: raw `r ‖ s`, 64 bytes; EdDSA: 64 bytes).
    public let signature: [UInt8]
    /// The bytes signed: ASCII `header.payload`.
    public let signingInput: [UInt8]

    /// Header members understood besides `alg`; any other (`crit`, `b64`, `jwk`, …) is refused.
    private static let headerMembers: Set<String> = ["alg", "typ", "kid"]

    /// Splits `text`; `signature_invalid` when it is not a compact JWS with an accepted header.
    public init(_ text: String) throws(LedgerError) {
        func bad(_ why: String) -> LedgerError { LedgerError(.signatureInvalid, "signature \(why)", field: "signature") }
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, text.utf8.count <= 4096 else { throw bad("is not a compact JWS (three base64url parts)") }
        guard let header = Base64URL.decode(Substring(parts[0])), let payload = Base64URL.decode(Substring(parts[1])),
              let signature = Base64URL.decode(Substring(parts[2])) else { throw bad("has a part that is not base64url") }
        guard case let .object(members)? = try? JSON.parse(header) else { throw bad("header is not a JSON object") }
        guard Set(members.map(\.0)).count == members.count else { throw bad("header repeats a member") }
        for (k, _) in members where !Self.headerMembers.contains(k) { throw bad("header member \"\(EventDecoder.clip(k))\" is not supported") }
        guard case let .string(alg)? = members.first(where: { $0.0 == "alg" })?.1, let a = DeviceKey.Algorithm(rawValue: alg) else {
            throw bad("header alg must be ES256 or EdDSA")
        }
        guard signature.count == 64 else { throw bad("is not 64 bytes") }
        self.algorithm = a
        self.payload = payload
        self.signature = signature
        self.signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
    }
}
