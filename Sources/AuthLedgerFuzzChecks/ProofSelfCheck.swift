import AuthLedger

/// Fuzz properties of the device-proof decoders (reference section 11): untrusted JWKs,
/// compact JWSs and link tokens never crash them, and what they accept is consistent.
/// A violated property throws a ``FuzzFailure``, like ``CodecSelfCheck``.
public enum ProofSelfCheck {
    private static let probe = try! DeviceKey(jwk: StringMap([("kty", "OKP"), ("crv", "Ed25519"),
                                                              ("x", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")]))

    /// A JWK as JSON: an accepted key reads back the same from its own JWK, and has a 43-character thumbprint.
    public static func jwk(_ bytes: [UInt8]) throws {
        guard let json = try? JSON.parse(bytes), let m = try? Command.publicKey(json) else { return }
        guard let key = try? DeviceKey(jwk: m) else { throw FuzzFailure("an accepted JWK does not read as a key") }
        try FuzzFailure.require(key.thumbprint.utf8.count == 43, "a thumbprint is not 32 bytes of base64url")
        guard let again = try? DeviceKey(jwk: key.jwk) else { throw FuzzFailure("a key's own JWK is refused") }
        try FuzzFailure.require(again == key && again.thumbprint == key.thumbprint, "a key's JWK reads back as another key")
    }

    /// A compact JWS: an accepted one has a 64-byte signature and signs its own first two parts;
    /// checking it against a key never crashes.
    public static func jws(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let jws = try? CompactJWS(text) else { return }
        try FuzzFailure.require(jws.signature.count == 64, "an accepted JWS has a signature that is not 64 bytes")
        try FuzzFailure.require(Array(text.utf8).starts(with: jws.signingInput), "the signing input is not the JWS's first two parts")
        _ = probe.verifies(jws)
    }

    /// A link token: base64url decoding is canonical (what decodes re-encodes to the same text),
    /// and a well-formed token is 32 bytes.
    public static func linkToken(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        if let decoded = Base64URL.decode(text) {
            try FuzzFailure.require(Base64URL.encode(decoded) == text, "base64url decoding is not canonical")
        }
        if LinkToken.isWellFormed(text) { try FuzzFailure.require(Base64URL.decode(text)?.count == 32, "a well-formed token is not 32 bytes") }
    }
}
