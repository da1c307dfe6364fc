import AuthLedger
import Foundation
import JWTKit

/// The claims of a Security Event Token (RFC 8417) as the project's JSON value, so
/// that member order and numbers are exactly as built (`SETBuilder`). jwt-kit signs
/// it; `SETSerializer` hands jwt-kit the JSON bytes, skipping a round trip through
/// `JSONEncoder` (the signing input is still jwt-kit's: header, payload, signature).
struct SETPayload: JWTPayload {
    let claims: JSON

    init(_ claims: JSON) { self.claims = claims }

    /// Nothing to check: the transmitter only signs SETs.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    func encode(to encoder: any Encoder) throws {
        try CodableJSON(claims).encode(to: encoder)
    }

    init(from decoder: any Decoder) throws {
        claims = try CodableJSON(from: decoder).value
    }
}

/// jwt-kit's serializer contract for `SETPayload`: the base64url of the claims' JSON.
struct SETSerializer: JWTSerializer {
    var jsonEncoder: any JWTJSONEncoder = JSONEncoder()

    func serialize(_ payload: some JWTPayload, header: JWTHeader) throws -> Data {
        if let set = payload as? SETPayload {
            return Data(base64url(Array(set.claims.serialized().utf8)).utf8)
        }
        return Data(base64url(Array(try jsonEncoder.encode(payload))).utf8)
    }
}

/// `JSON` through `Codable` (for encoders other than `SETSerializer`).
struct CodableJSON: Codable {
    let value: JSON

    init(_ value: JSON) { self.value = value }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The JSON tree's own encoding (members in their order).
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }

    init(from decoder: any Decoder) throws {
        if let c = try? decoder.container(keyedBy: Key.self) {
            value = .object(try c.allKeys.map { ($0.stringValue, try c.decode(CodableJSON.self, forKey: $0).value) })
        } else if var c = try? decoder.unkeyedContainer() {
            var items: [JSON] = []
            while !c.isAtEnd { items.append(try c.decode(CodableJSON.self).value) }
            value = .array(items)
        } else {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() { value = .null }
            else if let b = try? c.decode(Bool.self) { value = .bool(b) }
            else if let i = try? c.decode(Int64.self) { value = .int(i) }
            else if let d = try? c.decode(Double.self) { value = .number(String(d)) }
            else { value = .string(try c.decode(String.self)) }
        }
    }
}
