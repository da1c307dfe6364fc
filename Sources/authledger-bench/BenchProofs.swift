import AuthLedger
import AuthLedgerLMDB
import AuthLedgerServer
import Crypto
import Foundation
import Logging

/// Device-proof phases of `authledger bench` (reference section 11): signature verification
/// rates, signed against unsigned approvals end to end over HTTP, and link redemption
/// against the number of pending links.
extension BenchRun {
    /// ES256 and EdDSA verifications per second on one thread (swift-crypto), over an
    /// answer's JCS payload as the ledger checks it.
    func proofVerify(count: Int = 20_000) throws -> (es256: Double, edDSA: Double) {
        func rate(_ key: DeviceKey, _ jws: CompactJWS) throws -> Double {
            var ok = 0
            let s = try BenchRun.seconds { for _ in 0..<count where key.verifies(jws) { ok += 1 } }
            guard ok == count else { throw LedgerError(.storageError, "a bench signature did not verify") }
            return Double(count) / s
        }
        let payload = ApprovalStatement.payload(user: "bench", challengeId: "c", decision: "approve", deviceId: "phone",
                                                nonce: "AAECAwQFBgcICQoLDA0ODw", userVerified: true)
        let es = BenchKey(es256: true), ed = BenchKey(es256: false)
        return (try rate(es.key, try CompactJWS(es.sign(payload))), try rate(ed.key, try CompactJWS(ed.sign(payload))))
    }

    /// Approvals over HTTP (`POST …/approve`, write token, keep-alive loopback connections):
    /// unsigned, ES256-signed and EdDSA-signed, each against its own users with a pending
    /// challenge; the client signs beforehand, so the time is the server's.
    func approveOverHTTP(_ ledger: Ledger, connections: Int = 8, perConnection: Int = 250) async throws -> [(String, Double, Double)] {
        let server = try await BenchServer.start(ledger, tokens: "bench-write-token:write")
        defer { server.cancel() }
        let port = server.port

        var out: [(String, Double, Double)] = []
        for mode in ["unsigned", "es256", "eddsa"] {
            // Given one user per approval, each with a phone (keyed or not) and a pending challenge
            let key: BenchKey? = mode == "unsigned" ? nil : BenchKey(es256: mode == "es256")
            var requests: [[(String, String)]] = Array(repeating: [], count: connections)
            var batch: [EventInput] = []
            let at = Timestamp.now()
            var seeded: [(user: String, cid: String, nonce: String)] = []
            for i in 0..<(connections * perConnection) {
                let user = "bench-approve-\(mode)-\(i)"
                var reg = EventData()
                reg[.deviceId] = .string("phone"); reg[.name] = .string("Bench phone"); reg[.kind] = .string("mobile")
                reg[.binding] = .string("permanent"); reg[.via] = .string("initial")
                if let key { reg[.publicKey] = .map(key.key.jwk) }
                batch.append(EventInput(event: Event(type: .registered, user: user, at: at, data: reg)))
                let nonce = Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
                var ch = EventData()
                ch[.challengeId] = .string("c1"); ch[.action] = .string("login"); ch[.requestingDeviceId] = .string("laptop")
                ch[.expiresAt] = .time(at.adding(seconds: 3600)); ch[.nonce] = .string(nonce)
                batch.append(EventInput(event: Event(type: .challengeIssued, user: user, at: at, data: ch)))
                seeded.append((user, "c1", nonce))
                if batch.count >= BenchRun.batch { _ = try await ledger.append(batch); batch = [] }
            }
            if !batch.isEmpty { _ = try await ledger.append(batch) }
            for (i, s) in seeded.enumerated() {
                var body = #"{"deviceId":"phone""#
                if let key {
                    let sig = key.sign(ApprovalStatement.payload(user: s.user, challengeId: s.cid, decision: "approve", deviceId: "phone",
                                                                 nonce: s.nonce, userVerified: nil))
                    body += #","signature":"\#(sig)""#
                }
                requests[i % connections].append(("/v1/users/\(s.user)/challenges/\(s.cid)/approve", body + "}"))
            }
            // When every connection posts its approvals
            let t0 = DispatchTime.now().uptimeNanoseconds
            let latencies: [[Double]] = try await withThrowingTaskGroup(of: [Double].self) { g in
                for c in 0..<connections {
                    let r = requests[c]
                    g.addTask { try await BenchRun.onThread { try LoopbackClient(port: port).post(r, token: "bench-write-token") } }
                }
                var all: [[Double]] = []
                for try await l in g { all.append(l) }
                return all
            }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
            let all = latencies.flatMap { $0 }.sorted()
            out.append((mode, Double(all.count) / elapsed, BenchRun.percentile(all, 0.5)))
        }
        await server.stop()
        return out
    }

    /// Link redemptions (`redeemLink`, one durable commit each) with `pending` other links
    /// waiting: p50 in ms. The index finds a token's request by its keyed hash, so the
    /// time should not grow with `pending`.
    func linkRedeem(_ ledger: Ledger, pending: Int, redemptions: Int = 200) async throws -> Double {
        let secrets = try ledger.secrets()
        let at = Timestamp.now()
        var batch: [EventInput] = []
        var tokens: [String] = []
        for i in 0..<(pending + redemptions) {
            let token = LinkToken.random()
            var d = EventData()
            d[.deviceId] = .string("laptop"); d[.name] = .string("Bench laptop"); d[.verificationId] = .string("v-\(pending)-\(i)")
            d[.linkHash] = .string(LinkToken.hash(token, secrets: secrets)); d[.linkExpiresAt] = .time(at.adding(seconds: 3600))
            // Each link its own user (one pending device each), as a service's sign-ins would be.
            batch.append(EventInput(event: Event(type: .verificationRequested, user: "bench-link-\(pending)-\(i)", at: at, data: d)))
            if i >= pending { tokens.append(token) }
            if batch.count >= BenchRun.batch { _ = try await ledger.append(batch); batch = [] }
        }
        if !batch.isEmpty { _ = try await ledger.append(batch) }
        var lat: [Double] = []
        for token in tokens {
            let s = DispatchTime.now().uptimeNanoseconds
            _ = try await ledger.redeemLink(try LinkRedemptionRequest(token: token))
            lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e6)
        }
        return BenchRun.percentile(lat.sorted(), 0.5)
    }
}

/// A device key of the benchmark (swift-crypto), signing compact JWSs.
struct BenchKey: Sendable {
    let es: P256.Signing.PrivateKey?
    let ed: Curve25519.Signing.PrivateKey?
    let key: DeviceKey

    init(es256: Bool) {
        es = es256 ? P256.Signing.PrivateKey() : nil
        ed = es256 ? nil : Curve25519.Signing.PrivateKey()
        let jwk: StringMap
        if let es {
            let raw = Array(es.publicKey.x963Representation)
            jwk = StringMap([("kty", "EC"), ("crv", "P-256"), ("x", Base64URL.encode(Array(raw[1..<33]))), ("y", Base64URL.encode(Array(raw[33..<65])))])
        } else {
            jwk = StringMap([("kty", "OKP"), ("crv", "Ed25519"), ("x", Base64URL.encode(Array(ed!.publicKey.rawRepresentation)))])
        }
        key = try! DeviceKey(jwk: jwk)
    }

    func sign(_ payload: [UInt8]) -> String {
        let input = Base64URL.encode(Array(#"{"alg":"\#(es == nil ? "EdDSA" : "ES256")"}"#.utf8)) + "." + Base64URL.encode(payload)
        let sig: [UInt8] = es.map { Array(try! $0.signature(for: Array(input.utf8)).rawRepresentation) } ?? Array(try! ed!.signature(for: Array(input.utf8)))
        return input + "." + Base64URL.encode(sig)
    }
}
