@testable import AuthLedger
import AuthLedgerCore
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Crypto
import Foundation
import Testing

/// Ed25519 device keys that are no point of the curve, or a small-order one (reference
/// section 7): given the vectors of `Fixtures/keys/ed25519-points.json`, whose claims
/// `tools/ed25519-points.py` checks with its own arithmetic, when they are registered,
/// rotated to, imported or found in a store, then each is `invalid_event` (`tampered` with
/// its seq for `verify`) and a real point is accepted.
@Suite struct Ed25519PointTests {
    struct Vector { let name: String, bytes: [UInt8], claim: String }

    static let vectors: [Vector] = {
        let url = Support.root.appendingPathComponent("Fixtures/keys/ed25519-points.json")
        let json = try! JSON.parse(Array(try! Data(contentsOf: url)))
        return json.arrayValue!.map { v in
            let hex = Array(v["hex"]!.stringValue!.utf8)
            let bytes = stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
            return Vector(name: v["name"]!.stringValue!, bytes: bytes, claim: v["claim"]!.stringValue!)
        }
    }()

    static func jwk(_ bytes: [UInt8]) -> StringMap { StringMap([("kty", "OKP"), ("crv", "Ed25519"), ("x", Base64URL.encode(bytes))]) }
    static var refused: [Vector] { vectors.filter { $0.claim != "point" } }

    @Test func theVectorsAreWhatTheIndependentCheckSays() throws {
        // Given the vectors, checked by tools/ed25519-points.py (Python's integers, RFC 8032's decoding)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Support.root.appendingPathComponent("tools/ed25519-points.py").path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(text)")
        #expect(text.hasPrefix("ok: \(Self.vectors.count) vectors"))
        // Every kind of refusal is covered: 8 small-order points, several non-points and non-canonical encodings
        #expect(Self.vectors.filter { $0.claim == "smallOrder" }.count == 8)
        #expect(Self.vectors.filter { $0.claim == "notOnCurve" }.count >= 4)
        #expect(Self.vectors.filter { $0.claim == "notCanonical" }.count >= 4)
        // When the ledger's check reads each, then it finds what the claim says
        for v in Self.vectors {
            let expected: Ed25519Point.Problem? = switch v.claim {
            case "notCanonical": .notCanonical
            case "notOnCurve": .notOnCurve
            case "smallOrder": .smallOrder
            default: nil
            }
            #expect(Ed25519Point.problem(v.bytes) == expected, "\(v.name)")
        }
    }

    @Test func generatedKeysArePoints() {
        // Given keys swift-crypto generates, then every one is a point of large order
        for _ in 0..<200 {
            let k = Curve25519.Signing.PrivateKey().publicKey
            #expect(Ed25519Point.problem(Array(k.rawRepresentation)) == nil)
        }
    }

    @Test(arguments: StorageKind.all) func registrationAndImportRefuseThemAndAppendNothing(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        for v in Self.refused {
            // When a registration carries the key
            let e = await b.code(try .register(user: "alice", deviceId: "phone", name: "Alice Phone", publicKey: Self.jwk(v.bytes)))
            // Then it is invalid_event naming the key
            #expect(e?.code == .invalidEvent, "\(v.name)")
            #expect(e?.field?.hasSuffix("publicKey") == true, "\(v.name)")
            // And so is an imported event with it
            let l = line("device.registered", at: "2026-05-01T10:00:00Z",
                         data: #"{"deviceId":"phone","name":"Alice Phone","kind":"mobile","binding":"permanent","via":"initial","publicKey":\#(Self.jwk(v.bytes).json.serialized())}"#)
            let i = await #expect(throws: LedgerError.self) { try await b.ledger.append(try inputs(l)) }
            #expect(i?.code == .invalidEvent, "\(v.name)")
        }
        #expect(try await b.ledger.head().seq == 0)
        // A real point is accepted
        let good = try #require(Self.vectors.first { $0.claim == "point" })
        try await b.run(try .register(user: "alice", deviceId: "phone", name: "Alice Phone", publicKey: Self.jwk(good.bytes)))
        #expect(try await b.ledger.head().seq == 1)
    }

    @Test(arguments: StorageKind.all) func rotationToOneIsRefusedEvenWhenSigned(_ storage: StorageKind) async throws {
        // Given a device with a real key
        let b = try await Bench(storage)
        let old = ProofKey(.edDSA)
        try await b.run(try .register(user: "alice", deviceId: "phone", name: "Alice Phone", publicKey: old.jwk))
        for v in Self.refused {
            // When it rotates to a refused key, signed by the old key over that key's thumbprint
            let x = Base64URL.encode(v.bytes)
            let thumb = Base64URL.encode(Array(SHA256.hash(data: Array(#"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#.utf8))))
            let e = await b.code(.rotateKey(user: "alice", deviceId: "phone", publicKey: Self.jwk(v.bytes), signature: old.sign(Array(thumb.utf8))))
            // Then it is invalid_event, nothing appended
            #expect(e?.code == .invalidEvent, "\(v.name)")
        }
        #expect(try await b.ledger.head().seq == 1)
    }

    @Test func aSmallOrderKeyVerifiesNoSignature() throws {
        // Given a key read from a store that holds the neutral element (recorded before the check)
        let identity = try #require(Self.vectors.first { $0.name.hasPrefix("neutral") })
        let key = try DeviceKey(recorded: Self.jwk(identity.bytes))
        // When a signature made of the neutral element and s = 0 is checked (it matches any
        // message under this key: [s]B = R + [k]A holds with R = A = the neutral element)
        let header = Base64URL.encode(Array(#"{"alg":"EdDSA"}"#.utf8))
        let jws = try CompactJWS(header + "." + Base64URL.encode(Array("anything".utf8)) + "." + Base64URL.encode(identity.bytes + [UInt8](repeating: 0, count: 32)))
        // Then it does not verify
        #expect(!key.verifies(jws))
    }

    @Test func theCLIRefusesThemOnRegistrationAndRotation() throws {
        let store = Support.tempDir("authledger-ed25519") + "/store"
        let old = ProofKey(.edDSA)
        #expect(try CLI.run(["register", "alice", "phone", "--name", "Alice Phone", "--public-key", old.jwkText, "--store", store, "--now", "2026-05-01T10:00:00Z"]).status == 0)
        for v in Self.refused {
            let jwk = Self.jwk(v.bytes)
            // When `register --public-key` names it: exit 1, invalid_event
            let r = try CLI.run(["register", "alice", "laptop", "--name", "Alice Laptop", "--via", "admin", "--public-key", jwk.json.serialized(), "--store", store, "--now", "2026-05-01T10:00:01Z"])
            #expect(r.status == 1 && r.stderr.hasPrefix("error: invalid_event: "), "\(v.name): \(r.stderr)")
            // When `rotate-key` names it, signed by the current key over its thumbprint: the same
            let thumb = Base64URL.encode(Array(SHA256.hash(data: Array(#"{"crv":"Ed25519","kty":"OKP","x":"\#(jwk["x"]!)"}"#.utf8))))
            let k = try CLI.run(["rotate-key", "alice", "phone", "--public-key", jwk.json.serialized(), "--signature", old.sign(Array(thumb.utf8)), "--store", store, "--now", "2026-05-01T10:00:01Z"])
            #expect(k.status == 1 && k.stderr.hasPrefix("error: invalid_event: "), "\(v.name): \(k.stderr)")
        }
        #expect(try CLI.run(["history", "alice", "--store", store]).stdout.split(separator: "\n").count == 1)
    }

    @Test func verifyNamesTheSeqOfAStoredKeyThatIsNoPoint() throws {
        // Given a store written before the check (Fixtures/stores/ed25519-keys: alice's phone
        // with a real key at seq 1, bob's phone with the key y = 2 at seq 2, carol's with the
        // neutral element at seq 3)
        let dir = Support.tempDir("authledger-ed25519-store")
        let fixture = Support.fixture("stores/ed25519-keys/store").path
        for f in try FileManager.default.contentsOfDirectory(atPath: fixture) {
            try FileManager.default.copyItem(atPath: fixture + "/" + f, toPath: dir + "/" + f)
        }
        // When it is verified: tampered at seq 2, the first event whose key is no point
        // (The first open computes the users' stream hashes and says so first.)
        let r = try CLI.run(["verify", "--store", dir])
        #expect(r.status == 1)
        let error = r.stderr.split(separator: "\n").last { $0.hasPrefix("error: ") } ?? ""
        #expect(error.hasPrefix("error: tampered: ") && error.contains("invalid_event") && error.contains("seq 2"), "\(r.stderr)")
        // Reads go on: the devices of each user are still answered
        let d = try CLI.run(["devices", "bob", "--json", "--store", dir])
        #expect(d.status == 0, "\(d.stderr)")
        #expect(d.stdout.contains(#""hasKey":true"#))
    }
}
