import AuthLedger
import AuthLedgerLMDB
@testable import AuthLedgerServer
import Crypto
import Foundation
import AuthLedgerTestSupport
import Testing

/// Device proofs over HTTP (reference sections 5.2 and 7): link redemption (201, 404, 410,
/// 400, and the failed-authentication limit), key rotation, and signed answers.
@Suite(.timeLimit(.minutes(2))) struct ProofRouteTests {
    /// An Ed25519 device key (swift-crypto) that signs compact JWSs.
    struct Key {
        let k = Curve25519.Signing.PrivateKey()
        var jwk: String { #"{"kty":"OKP","crv":"Ed25519","x":"\#(Base64URL.encode(Array(k.publicKey.rawRepresentation)))"}"# }
        func sign(_ payload: String) -> String {
            let input = Base64URL.encode(Array(#"{"alg":"EdDSA"}"#.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
            return input + "." + Base64URL.encode(Array(try! k.signature(for: Array(input.utf8))))
        }
        var thumbprint: String {
            let x = Base64URL.encode(Array(k.publicKey.rawRepresentation))
            return Base64URL.encode(Array(SHA256.hash(data: Array(#"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#.utf8))))
        }
    }

    @Test(arguments: StorageKind.all) func aLinkIsRedeemedOnceOverHTTP(_ storage: StorageKind) async throws {
        let clock = TestClock()
        try await withServer(storage, clock: clock) { s in
            #expect(try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"phone","name":"Alice Phone"}"#).status == 201)
            var r = try await s.call(.POST, "/v1/users/alice/verification-requests", body: #"{"deviceId":"laptop","name":"Alice Laptop","kind":"desktop"}"#)
            #expect(r.status == 201)
            let token = try #require(r["token"]?.stringValue)
            let vid = try #require(r["verificationId"]?.stringValue)
            // The token is not in the event feed's data or the export
            #expect(!(try await s.call(.GET, "/v1/export", token: "auditor-token").body.contains(token)))
            let key = Key()
            r = try await s.call(.POST, "/v1/verification-links/redeem", body: #"{"token":"\#(token)","name":"ignored","publicKey":\#(key.jwk)}"#)
            #expect(r.status == 201, "\(r.body)")
            #expect(r["verificationId"] == .string(vid))
            r = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
            let laptop = r["devices"]?.arrayValue?.first { $0["deviceId"] == .string("laptop") }
            #expect(laptop?["via"] == .string("email_link") && laptop?["name"] == .string("Alice Laptop"))
            #expect(laptop?["keyThumbprint"] == .string(key.thumbprint))
            // Used: 404 link_invalid; unknown: 404; malformed: 400 naming the token; nothing of the token in the answer
            r = try await s.call(.POST, "/v1/verification-links/redeem", body: #"{"token":"\#(token)"}"#)
            #expect(r.status == 404 && r.error == "link_invalid" && !r.body.contains(token))
            r = try await s.call(.POST, "/v1/verification-links/redeem", body: #"{"token":"\#(LinkToken.random())"}"#)
            #expect(r.status == 404 && r.error == "link_invalid")
            r = try await s.call(.POST, "/v1/verification-links/redeem", body: #"{"token":"abc"}"#)
            #expect(r.status == 400 && r.error == "invalid_event" && r["field"] == .string("token"))
            // Expired: 410 with until
            r = try await s.call(.POST, "/v1/users/alice/verification-requests", body: #"{"deviceId":"tablet","name":"Alice Tablet"}"#)
            let late = try #require(r["token"]?.stringValue)
            clock.advance(seconds: 600)
            r = try await s.call(.POST, "/v1/verification-links/redeem", body: #"{"token":"\#(late)"}"#)
            #expect(r.status == 410 && r.error == "link_expired" && r["until"] != nil)
            // The writer role redeems; a reader may not
            #expect(try await s.call(.POST, "/v1/verification-links/redeem", token: "reader-token", body: #"{"token":"\#(late)"}"#).status == 403)
        }
    }

    @Test func failedRedemptionsCountAgainstTheAddress() async throws {
        try await withServer(configure: { $0.authFailureLimit = RateLimit(perSecond: 0.001, burst: 3) }) { s in
            for _ in 0..<3 {
                #expect(try await s.call(.POST, "/v1/verification-links/redeem", body: #"{"token":"\#(LinkToken.random())"}"#).status == 404)
            }
            let r = try await s.call(.POST, "/v1/verification-links/redeem", body: #"{"token":"\#(LinkToken.random())"}"#)
            #expect(r.status == 429 && r.error == "rate_limited")
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token").status == 429)
        }
    }

    @Test(arguments: StorageKind.all) func keysRotateAndAnswersAreSignedOverHTTP(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            let old = Key(), new = Key()
            var r = try await s.call(.POST, "/v1/users/bob/devices", body: #"{"deviceId":"phone","name":"Bob Phone","publicKey":\#(old.jwk)}"#)
            #expect(r.status == 201)
            // A bad key is 400 invalid_event, nothing appended
            r = try await s.call(.POST, "/v1/users/bob/devices", body: #"{"deviceId":"x","name":"Bob X","via":"admin","publicKey":{"kty":"OKP","crv":"Ed25519","x":"AA","d":"AA"}}"#)
            #expect(r.status == 400 && r.error == "invalid_event")
            r = try await s.call(.POST, "/v1/users/bob/challenges", body: #"{"requestingDeviceId":"laptop"}"#)
            let cid = try #require(r["challengeId"]?.stringValue), nonce = try #require(r["nonce"]?.stringValue)
            r = try await s.call(.GET, "/v1/users/bob/pending", token: "reader-token")
            #expect(r.json?.arrayValue?.first?["nonce"] == .string(nonce))
            let payload = #"{"challengeId":"\#(cid)","decision":"approve","deviceId":"phone","nonce":"\#(nonce)","user":"bob"}"#
            // Signed by another key: 400 signature_invalid
            r = try await s.call(.POST, "/v1/users/bob/challenges/\(cid)/approve", body: #"{"deviceId":"phone","signature":"\#(new.sign(payload))"}"#)
            #expect(r.status == 400 && r.error == "signature_invalid")
            // Rotation by the old key over the new thumbprint
            r = try await s.call(.POST, "/v1/users/bob/devices/phone/key", body: #"{"publicKey":\#(new.jwk),"signature":"\#(new.sign(new.thumbprint))"}"#)
            #expect(r.status == 400 && r.error == "signature_invalid")
            r = try await s.call(.POST, "/v1/users/bob/devices/phone/key", body: #"{"publicKey":\#(new.jwk),"signature":"\#(old.sign(new.thumbprint))"}"#)
            #expect(r.status == 200, "\(r.body)")
            r = try await s.call(.POST, "/v1/users/bob/challenges/\(cid)/approve", body: #"{"deviceId":"phone","signature":"\#(new.sign(payload))"}"#)
            #expect(r.status == 200, "\(r.body)")
            // The new events flow in the feed like the others, with their proofs
            let feed = try await s.subscribe("/v1/events?from=1&types=device.key_rotated,challenge.approved")
            let events = try await feed.waitFor(count: 2)
            #expect(events.map(\.event) == ["device.key_rotated", "challenge.approved"])
            #expect(events.last?.json?["data"]?["signature"] == .string(new.sign(payload)))
            // requireSignedApprovals: an unsigned denial of a keyed device is 409 signature_required
            #expect(try await s.call(.PUT, "/v1/policy", body: #"{"requireSignedApprovals":true}"#).status == 200)
            r = try await s.call(.POST, "/v1/users/bob/challenges", body: #"{"requestingDeviceId":"laptop"}"#)
            let c2 = try #require(r["challengeId"]?.stringValue)
            r = try await s.call(.POST, "/v1/users/bob/challenges/\(c2)/deny", body: #"{"deviceId":"phone"}"#)
            #expect(r.status == 409 && r.error == "signature_required")
            r = try await s.call(.GET, "/v1/verify", token: "auditor-token")
            #expect(r.status == 200)
        }
    }

    @Test(arguments: StorageKind.all) func edwardsKeysThatAreNoPointOrOfSmallOrderAre400OverHTTP(_ storage: StorageKind) async throws {
        // y = 2 has no x on the curve; y = 1 is the neutral element; c7176a…7a a point of order 8
        let refused = [
            "AgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "xxdqcD1N2E-6PAt2DRBnDyogU_osOczGTsf9d5KsA3o",
        ]
        try await withServer(storage) { s in
            let old = Key()
            var r = try await s.call(.POST, "/v1/users/bob/devices", body: #"{"deviceId":"phone","name":"Bob Phone","publicKey":\#(old.jwk)}"#)
            #expect(r.status == 201)
            for x in refused {
                let jwk = #"{"kty":"OKP","crv":"Ed25519","x":"\#(x)"}"#
                // When a registration carries it: 400 invalid_event naming the key
                r = try await s.call(.POST, "/v1/users/bob/devices", body: #"{"deviceId":"x","name":"Bob X","via":"admin","publicKey":\#(jwk)}"#)
                #expect(r.status == 400 && r.error == "invalid_event", "\(x): \(r.body)")
                #expect(r["field"]?.stringValue == "publicKey")
                // When a rotation to it is signed by the current key over its thumbprint: 400 too
                let thumb = Base64URL.encode(Array(SHA256.hash(data: Array(#"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#.utf8))))
                r = try await s.call(.POST, "/v1/users/bob/devices/phone/key", body: #"{"publicKey":\#(jwk),"signature":"\#(old.sign(thumb))"}"#)
                #expect(r.status == 400 && r.error == "invalid_event", "\(x): \(r.body)")
                // As an imported event: 400
                r = try await s.call(.POST, "/v1/events", token: "importer-token", body: #"[{"type":"device.registered","user":"carol","at":"2026-05-01T10:00:00Z","data":{"deviceId":"p","name":"Carol P","kind":"mobile","binding":"permanent","via":"initial","publicKey":\#(jwk)}}]"#)
                #expect(r.status == 400 && r.error == "invalid_event", "\(x): \(r.body)")
            }
            // Nothing was appended
            r = try await s.call(.GET, "/v1/users/bob/history", token: "reader-token")
            #expect(r.json?.arrayValue?.count == 1)
        }
    }
}
