@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import Testing

/// Device keys and signed answers (reference section 11): given a user whose devices have
/// keys, when approvals, denials and rotations arrive signed or not, then the ledger keeps
/// what verifies against the device's key as of that event and refuses the rest, appending nothing.
@Suite struct DeviceKeyTests {
    /// alice's phone registered with `key`, then a login challenge from a new laptop; returns its id and nonce.
    static func challenged(_ b: Bench, key: ProofKey) async throws -> (cid: String, nonce: String) {
        try await b.run(try .register(user: "alice", deviceId: "phone", name: "Alice Phone", publicKey: key.jwk))
        let r = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "laptop", action: "login", context: nil), at: "2026-05-01T10:00:10Z")
        let nonce = try #require(r.events[0].event.data.string(.nonce))
        return (r.challengeId!, nonce)
    }

    @Test(arguments: StorageKind.all) func aRegisteredKeyShowsItsThumbprint(_ storage: StorageKind) async throws {
        for kind in [ProofKey.Kind.es256, .edDSA] {
            let b = try await Bench(storage)
            let key = ProofKey(kind)
            try await b.run(try .register(user: "alice", deviceId: "phone", name: "Alice Phone", publicKey: key.jwk))
            try await b.run(try b.register("tablet", via: "admin"), at: "2026-05-01T10:00:01Z")
            let d = try await b.devices()
            #expect(d["phone"]?["hasKey"] == .bool(true))
            #expect(d["phone"]?["keyThumbprint"] == .string(key.thumbprint))
            #expect(d["tablet"]?["hasKey"] == .bool(false))
            #expect(d["tablet"]?["keyThumbprint"] == .null)
            // The maintained state (with the key) equals a replay of the log
            #expect(try await b.ledger.verify().seq == 2)
            try await b.ledger.replay()
            await #expect(try b.devices()["phone"]?["keyThumbprint"] == .string(key.thumbprint))
        }
    }

    @Test func badKeysAreInvalidEventAndNothingIsAppended() async throws {
        let b = try await Bench()
        let good = ProofKey(.es256).jwk
        let x = good["x"]!, y = good["y"]!
        var offCurveY = Base64URL.decode(y)!
        offCurveY[31] ^= 1
        let bad: [StringMap] = [
            StringMap(good.pairs + [("d", x)]),                                              // a private member
            StringMap([("kty", "EC"), ("crv", "P-384"), ("x", x), ("y", y)]),                // another curve
            StringMap([("kty", "EC"), ("crv", "P-256"), ("x", x), ("y", Base64URL.encode(offCurveY))]),  // not on the curve
            StringMap([("kty", "EC"), ("crv", "P-256"), ("x", x)]),                          // no y
            StringMap([("kty", "EC"), ("crv", "P-256"), ("x", x + "A"), ("y", y)]),          // not 32 bytes
            StringMap([("kty", "RSA"), ("n", x), ("e", "AQAB")]),                            // RSA
            StringMap([("kty", "OKP"), ("crv", "X25519"), ("x", x)]),                        // not a signing curve
            StringMap(good.pairs + [("alg", "EdDSA")]),                                      // alg of another key type
            StringMap(good.pairs + [("x5u", "https://example.com")]),                        // unknown member
        ]
        for jwk in bad {
            await #expect(b.code(try .register(user: "alice", deviceId: "phone", name: "Alice Phone", publicKey: jwk))?.code == .invalidEvent, "\(jwk.json.serialized())")
            // The same key in an imported event is refused the same way
            let l = line("device.registered", at: "2026-05-01T10:00:00Z",
                         data: #"{"deviceId":"phone","name":"Alice Phone","kind":"mobile","binding":"permanent","via":"initial","publicKey":\#(jwk.json.serialized())}"#)
            #expect(await refusal { try await b.ledger.importText(l) }?.code == .invalidEvent)
        }
        #expect(throws: LedgerError.self) { try Command.publicKey(json: "{not json") }
        #expect(try await b.ledger.head().seq == 0)
    }

    @Test(arguments: StorageKind.all) func signedApprovalsAndDenialsVerifyForBothAlgorithms(_ storage: StorageKind) async throws {
        for kind in [ProofKey.Kind.es256, .edDSA] {
            let b = try await Bench(storage)
            let key = ProofKey(kind)
            let (cid, nonce) = try await Self.challenged(b, key: key)
            let sig = key.answer(user: "alice", challengeId: cid, decision: "approve", deviceId: "phone", nonce: nonce, userVerified: true)
            let r = try await b.run(.approve(user: "alice", challengeId: cid, deviceId: "phone", userVerified: true, signature: sig))
            #expect(r.events[0].event.data.string(.signature) == sig)
            // A denial is signed over "deny"
            let c2 = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "laptop", action: "login", context: nil))
            let n2 = c2.events[0].event.data.string(.nonce)!
            let deny = key.answer(user: "alice", challengeId: c2.challengeId!, decision: "deny", deviceId: "phone", nonce: n2)
            try await b.run(.deny(user: "alice", challengeId: c2.challengeId!, deviceId: "phone", signature: deny))
            // verify re-checks both signatures; a replay accepts them too
            #expect(try await b.ledger.verify().seq == 5)
            try await b.ledger.replay()
        }
    }

    @Test(arguments: StorageKind.all) func forgedAnswersAreSignatureInvalidAndAppendNothing(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let key = ProofKey(.es256), other = ProofKey(.es256)
        let (cid, nonce) = try await Self.challenged(b, key: key)
        let head = try await b.ledger.head().seq
        func approve(_ sig: String, uv: Bool? = nil) async -> ErrorCode? {
            await b.code(.approve(user: "alice", challengeId: cid, deviceId: "phone", userVerified: uv, signature: sig))?.code
        }
        let right = key.answer(user: "alice", challengeId: cid, decision: "approve", deviceId: "phone", nonce: nonce)
        await #expect(approve(other.answer(user: "alice", challengeId: cid, decision: "approve", deviceId: "phone", nonce: nonce)) == .signatureInvalid)
        await #expect(approve(key.answer(user: "alice", challengeId: cid, decision: "approve", deviceId: "phone", nonce: "AAAAAAAAAAAAAAAAAAAAAA")) == .signatureInvalid)
        await #expect(approve(key.answer(user: "alice", challengeId: cid, decision: "deny", deviceId: "phone", nonce: nonce)) == .signatureInvalid)
        await #expect(approve(key.answer(user: "bob", challengeId: cid, decision: "approve", deviceId: "phone", nonce: nonce)) == .signatureInvalid)
        // userVerified claimed but not signed, or signed but not claimed
        await #expect(approve(right, uv: true) == .signatureInvalid)
        await #expect(approve(key.answer(user: "alice", challengeId: cid, decision: "approve", deviceId: "phone", nonce: nonce, userVerified: true)) == .signatureInvalid)
        // Not a JWS, alg none, an ES256 header on an Ed25519-shaped signature, a flipped bit
        await #expect(approve("not-a-jws") == .signatureInvalid)
        await #expect(approve(key.sign(Array("x".utf8), header: #"{"alg":"none"}"#)) == .signatureInvalid)
        await #expect(approve(key.sign(Array("x".utf8), header: #"{"alg":"ES256","crit":["b64"]}"#)) == .signatureInvalid)
        var flipped = Array(right.utf8)
        flipped[flipped.count - 3] = flipped[flipped.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        await #expect(approve(String(decoding: flipped, as: UTF8.self)) == .signatureInvalid)
        #expect(try await b.ledger.head().seq == head)
        // The right one passes
        try await b.run(.approve(user: "alice", challengeId: cid, deviceId: "phone", userVerified: nil, signature: right))
    }

    @Test func aSignatureFromADeviceWithoutAKeyOrForAChallengeWithoutNonceIsInvalid() async throws {
        let b = try await Bench()
        let key = ProofKey(.edDSA)
        try await b.run(b.register("phone"))
        let r = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "laptop", action: "login", context: nil))
        let sig = key.answer(user: "alice", challengeId: r.challengeId!, decision: "approve", deviceId: "phone", nonce: r.events[0].event.data.string(.nonce)!)
        await #expect(b.code(.approve(user: "alice", challengeId: r.challengeId!, deviceId: "phone", userVerified: nil, signature: sig))?.code == .signatureInvalid)
        // A challenge recorded without a nonce (before device proofs) cannot be answered with a signature
        let b2 = try await Bench()
        try await b2.ledger.importText([
            line("device.registered", at: "2026-05-01T09:00:00Z", data: #"{"deviceId":"phone","name":"Alice Phone","kind":"mobile","binding":"permanent","via":"initial","publicKey":\#(key.jwkText)}"#),
            line("challenge.issued", at: "2026-05-01T09:59:50Z", data: #"{"challengeId":"c1","action":"login","requestingDeviceId":"laptop","expiresAt":"2026-05-01T10:05:00Z"}"#),
        ].joined(separator: "\n"))
        let s2 = key.answer(user: "alice", challengeId: "c1", decision: "approve", deviceId: "phone", nonce: "")
        await #expect(b2.code(.approve(user: "alice", challengeId: "c1", deviceId: "phone", userVerified: nil, signature: s2))?.code == .signatureInvalid)
        // …but unsigned, as before
        try await b2.run(.approve(user: "alice", challengeId: "c1", deviceId: "phone", userVerified: nil))
    }

    @Test func codesRankAsTheReferenceSays() async throws {
        let b = try await Bench()
        let key = ProofKey(.es256)
        let (cid, _) = try await Self.challenged(b, key: key)
        // existence and state before proof: an unknown challenge with a bad signature
        await #expect(b.code(.approve(user: "alice", challengeId: "nope", deviceId: "phone", userVerified: nil, signature: "x.y.z"))?.code == .challengeNotFound)
        // approver_not_trusted and signature_invalid are both authority: the approver's trust is checked first
        await #expect(b.code(.approve(user: "alice", challengeId: cid, deviceId: "ghost", userVerified: nil, signature: "x.y.z"))?.code == .approverNotTrusted)
    }

    @Test(arguments: StorageKind.all) func requireSignedApprovalsRefusesUnsignedAnswersOfKeyedDevices(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let key = ProofKey(.es256)
        try await b.run(.setPolicy(PolicySet(requireSignedApprovals: true)))
        let (cid, nonce) = try await Self.challenged(b, key: key)
        let e = await b.code(.approve(user: "alice", challengeId: cid, deviceId: "phone", userVerified: nil))
        #expect(e?.code == .signatureRequired)
        await #expect(b.code(.deny(user: "alice", challengeId: cid, deviceId: "phone"))?.code == .signatureRequired)
        // A device without a key still answers unsigned
        try await b.run(try b.register("tablet", via: "admin"), at: "2026-05-01T10:00:20Z")
        let c2 = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "laptop", action: "login", context: nil))
        try await b.run(.deny(user: "alice", challengeId: c2.challengeId!, deviceId: "tablet"))
        // A keyed requester's own challenge is not approved automatically: it stays pending
        let own = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "phone", action: "transaction", context: nil))
        #expect(own.events.map(\.event.type) == [.challengeIssued])
        let ownNonce = own.events[0].event.data.string(.nonce)!
        await #expect(b.code(.approve(user: "alice", challengeId: own.challengeId!, deviceId: "phone", userVerified: nil))?.code == .signatureRequired)
        // …and it may approve it itself with a signed answer
        try await b.run(.approve(user: "alice", challengeId: own.challengeId!, deviceId: "phone", userVerified: nil,
                           signature: key.answer(user: "alice", challengeId: own.challengeId!, decision: "approve", deviceId: "phone", nonce: ownNonce)))
        // An unkeyed active requester is still approved at once
        let tab = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "tablet", action: "login", context: nil))
        #expect(tab.events.map(\.event.type) == [.challengeIssued, .challengeApproved])
        _ = nonce
        #expect(try await b.ledger.verify().seq > 0)
    }

    @Test(arguments: StorageKind.all) func aKeyIsRotatedOnlyWithTheOldKeysSignatureOverTheNewThumbprint(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let old = ProofKey(.es256), new = ProofKey(.edDSA), thief = ProofKey(.es256)
        try await b.run(try .register(user: "alice", deviceId: "phone", name: "Alice Phone", publicKey: old.jwk))
        let thumb = Array(new.thumbprint.utf8)
        #expect(thumb.count == 43)
        func rotate(_ sig: String, _ key: ProofKey = new, device: String = "phone") async -> ErrorCode? {
            await b.code(.rotateKey(user: "alice", deviceId: device, publicKey: key.jwk, signature: sig))?.code
        }
        await #expect(rotate(thief.sign(thumb)) == .signatureInvalid)
        await #expect(rotate(new.sign(thumb)) == .signatureInvalid)
        await #expect(rotate(old.sign(Array(thief.thumbprint.utf8))) == .signatureInvalid)
        await #expect(rotate(old.sign(thumb), device: "ghost") == .deviceNotFound)
        #expect(try await b.ledger.head().seq == 1)
        try await b.run(.rotateKey(user: "alice", deviceId: "phone", publicKey: new.jwk, signature: old.sign(thumb)), at: "2026-05-01T10:00:05Z")
        await #expect(try b.devices()["phone"]?["keyThumbprint"] == .string(new.thumbprint))
        // Answers are checked against the key as of their event: the old key no longer signs
        let r = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "laptop", action: "login", context: nil))
        let n = r.events[0].event.data.string(.nonce)!
        await #expect(b.code(.approve(user: "alice", challengeId: r.challengeId!, deviceId: "phone", userVerified: nil,
                                signature: old.answer(user: "alice", challengeId: r.challengeId!, decision: "approve", deviceId: "phone", nonce: n)))?.code == .signatureInvalid)
        try await b.run(.approve(user: "alice", challengeId: r.challengeId!, deviceId: "phone", userVerified: nil,
                           signature: new.answer(user: "alice", challengeId: r.challengeId!, decision: "approve", deviceId: "phone", nonce: n)))
        // A device without a key cannot rotate one in
        try await b.run(try b.register("tablet", via: "admin"), at: "2026-05-01T10:00:20Z")
        await #expect(rotate(old.sign(thumb), device: "tablet") == .signatureInvalid)
        #expect(try await b.ledger.verify().seq == 5)
    }

    @Test(arguments: StorageKind.all) func anExportWithSignaturesReimportsWithIdenticalHashes(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let key = ProofKey(.edDSA)
        let (cid, nonce) = try await Self.challenged(b, key: key)
        try await b.run(.approve(user: "alice", challengeId: cid, deviceId: "phone", userVerified: nil,
                           signature: key.answer(user: "alice", challengeId: cid, decision: "approve", deviceId: "phone", nonce: nonce)))
        let export = try await b.ledger.exportText()
        let other = try await storage.freshLedger()
        try await other.importText(export)
        await #expect(try other.exportText() == export)
        // An export whose signature was edited is refused (its hash no longer matches), nothing appended
        let lines = export.split(separator: "\n").map(String.init)
        let sig = try await #require(try b.lastEvents(1).first?.event.data.string(.signature))
        let forged = String(sig.dropLast(2)) + (sig.hasSuffix("AA") ? "BA" : "AA")
        let edited = lines.map { $0.replacingOccurrences(of: sig, with: forged) }.joined(separator: "\n")
        let third = try await storage.freshLedger()
        #expect(await refusal { _ = try await third.append(try EventDecoder.decodeLines(Array(edited.utf8), file: "x.jsonl").map(\.input)) }?.code == .chainMismatch)
        // …and in the fixture form (no hash to betray it) the signature itself is refused at its line
        let fixture = [lines[0], lines[1], line("challenge.approved", at: "2026-05-01T10:00:20Z",
                                                  data: #"{"challengeId":"\#(cid)","approverDeviceId":"phone","signature":"\#(forged)"}"#)]
        let e = await refusal { _ = try await third.append(try EventDecoder.decodeLines(Array(fixture.joined(separator: "\n").utf8), file: "f.jsonl").map(\.input)) }
        #expect(e?.code == .signatureInvalid)
        #expect(try await third.head().seq == 0)
    }
}

/// `verify` re-checks every signature: a stored approval whose signature was replaced and
/// whose hash was recomputed (so the chain alone would not betray it) is named by its seq.
@Suite struct VerifySignatureTests {
    @Test(arguments: StorageKind.all) func verifyNamesTheFirstEventWhoseSignatureFails(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let key = ProofKey(.edDSA), thief = ProofKey(.edDSA)
        let (cid, nonce) = try await DeviceKeyTests.challenged(b, key: key)
        let head = try await b.ledger.head()
        #expect(try await b.ledger.verify() == head)
        // When an approval signed by another key is written straight into the store, with a
        // correct chain hash (what an attacker with write access to the files could do)
        var data = EventData()
        data[.challengeId] = .string(cid)
        data[.approverDeviceId] = .string("phone")
        data[.signature] = .string(thief.answer(user: "alice", challengeId: cid, decision: "approve", deviceId: "phone", nonce: nonce))
        let event = Event(id: EventID.random(), type: .challengeApproved, user: "alice", at: t("2026-05-01T10:00:20Z"), data: data)
        let seq = head.seq + 1
        let hash = RecordedEvent.computeHash(event, seq: seq, version: 3, prev: head.hash)
        let forged = RecordedEvent(event: event, seq: seq, version: 3, prev: head.hash, hash: hash)
        try await b.ledger.write { w in
            try w.putEvent(seq: seq, id: event.id!, stream: "alice", version: 3, bytes: EventCodec.encode(forged))
            try w.setHead(Head(seq: seq, hash: hash))
        }
        // Then verify names it, for its signature
        let e = await refusal { _ = try await b.ledger.verify() }
        #expect(e?.code == .tampered)
        #expect(e?.seq == seq)
        #expect(e?.message.contains("signature_invalid") == true, "\(String(describing: e))")
    }
}
