import AsyncHTTPClient
import AuthLedger
import AuthLedgerLMDB
@testable import AuthLedgerServer
import AuthLedgerTestSupport
import AuthLedgerWitness
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Testing

/// `serve --witness-policy`: the server sends its checkpoints to in-process witnesses
/// (the real `authledger witness` code on loopback ports) and serves the one meeting the
/// quorum, on LMDB and PostgreSQL.
@Suite(.timeLimit(.minutes(2))) struct WitnessCollectorTests {
    /// A witness on a loopback port over a temporary store.
    final class LocalWitness: @unchecked Sendable {
        let cosigner: Cosigner
        let port: Int
        let dir: String
        let group: ServiceGroup

        /// Witnessing the log of `logKey` and its index log (user proofs).
        init(name: String, logKey: String) async throws {
            dir = TestServer.temporaryDirectory()
            cosigner = try Cosigner(name: name, seed: (0..<32).map { _ in UInt8.random(in: 0...255) })
            let key = try NoteVerifierKey(parsing: logKey)
            let witness = Witness(cosigner: cosigner, logs: [key, try UserProofVerification.usersKey(key)], store: try WitnessStore(path: dir))
            var logger = Logger(label: "test.witness")
            logger.logLevel = .error
            (port, group) = try await WitnessServer(witness: witness).startInBackground(logger: logger)
        }

        func stop() async {
            await group.triggerGracefulShutdown()
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    static let origin = "witnessed.example/log"

    static func body(_ s: TestServer, _ path: String) async throws -> (Int, String) {
        let r = try await s.client.execute(s.request(.GET, path, token: "auditor-token"), timeout: .seconds(30))
        return (Int(r.status.code), String(buffer: try await r.body.collect(upTo: 1 << 20)))
    }

    @Test(arguments: StorageKind.all) func servesTheCheckpointMeetingTheQuorum(_ storage: StorageKind) async throws {
        let place = TestStore(storage)
        try FileManager.default.createDirectory(atPath: place.dir, withIntermediateDirectories: true)
        let logKey = try CheckpointSigner(origin: Self.origin, seed: CheckpointSigner.loadOrCreateSeed(path: place.dir + "/checkpoint.key")).verifierKey
        let a = try await LocalWitness(name: "a.witness.example", logKey: logKey)
        let b = try await LocalWitness(name: "b.witness.example", logKey: logKey)
        let absent = try Cosigner(name: "absent.witness.example", seed: [UInt8](repeating: 5, count: 32))
        let policy = try WitnessPolicy(parsing: """
            witness a \(a.cosigner.verifierKey) http://127.0.0.1:\(a.port)
            witness b \(b.cosigner.verifierKey) http://127.0.0.1:\(b.port)/
            witness absent \(absent.verifierKey) http://127.0.0.1:1
            group two 2 a b absent
            quorum two
            """)
        var witnessing = try WitnessingConfiguration(policy: policy)
        witnessing.interval = .milliseconds(100)
        witnessing.maxBackoff = .milliseconds(500)
        let s = try await TestServer.start(storage, at: place) {
            $0.checkpointOrigin = Self.origin
            $0.witnessing = witnessing
        }
        defer { Task { await a.stop(); await b.stop() } }
        // Nothing appended, nothing cosigned: 404 until a checkpoint meets the quorum.
        #expect(try await Self.body(s, "/checkpoint").0 == 404)
        try await VerifiableLogRouteTests.populate(s)
        var served = ""
        for _ in 0..<300 {
            let (status, text) = try await Self.body(s, "/checkpoint")
            if status == 200 { served = text; break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(served.hasPrefix("\(Self.origin)\n300\n"), "\(served)")
        let check = CheckpointVerification.check(Array(served.utf8), logKey: try NoteVerifierKey(parsing: logKey), policy: policy)
        #expect((try? check.get()) != nil, "\(check)")
        let note = try SignedNote(parsing: Array(served.utf8))
        #expect(note.cosignatures(by: a.cosigner.verifierKey).count == 1 && note.cosignatures(by: b.cosigner.verifierKey).count == 1)
        // A policy asking for the absent witness too is not met by it.
        let strict = try WitnessPolicy(parsing: "witness a \(a.cosigner.verifierKey)\nwitness x \(absent.verifierKey)\ngroup g all a x\nquorum g\n")
        #expect((try? CheckpointVerification.check(Array(served.utf8), logKey: try NoteVerifierKey(parsing: logKey), policy: strict).get()) == nil)
        // The newest checkpoint is the head's; an inclusion proof at the cosigned size leads to its root.
        #expect(try await Self.body(s, "/checkpoint/latest").1.hasPrefix("\(Self.origin)\n300\n"))
        let proof = try #require(try await s.call(.GET, "/v1/proofs/inclusion?seq=5&size=300", token: "auditor-token").json)
        #expect(proof["root"]?.stringValue == String(served.split(separator: "\n")[2]))
        // /health: each witness's lag, the absent one's error (once its connection was refused).
        var witnesses: [JSON] = []
        for _ in 0..<100 {
            witnesses = try #require(try await s.call(.GET, "/health", token: nil).json?["witnesses"]?.arrayValue)
            if witnesses.first(where: { $0["witness"]?.stringValue == "absent" })?["error"]?.stringValue != nil { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(witnesses.count == 3)
        let absentEntry = try #require(witnesses.first { $0["witness"]?.stringValue == "absent" })
        #expect(absentEntry["behind"] == .int(300) && absentEntry["error"]?.stringValue != nil)
        // …and of the index log: the absent witness holds none of it.
        let entries = try await s.server.ledger.usersTreeHead().size
        #expect(entries > 0 && absentEntry["users"]?["size"] == .null && absentEntry["users"]?["behind"] == .int(Int64(entries)), "\(absentEntry)")
        #expect(witnesses.first { $0["witness"]?.stringValue == "a" }?["behind"] == .int(0))
        #expect(try await s.waitForMetric("authledger_witness_behind{witness=\"absent\"}", atLeast: 300) == 300)
        #expect(try await s.waitForMetric("authledger_witness_users_behind{witness=\"absent\"}", atLeast: 1) >= 1)
        try await s.stop()
        s.removeStore()
    }

    /// The index log of user proofs is witnessed too: `/users/checkpoint` is the newest one
    /// meeting the quorum (grown through a consistency proof the witness checked), and a
    /// user proof carries its cosignatures, so `verify-user --witness-policy` holds.
    @Test(arguments: StorageKind.all) func witnessesTheIndexLog(_ storage: StorageKind) async throws {
        let place = TestStore(storage)
        try FileManager.default.createDirectory(atPath: place.dir, withIntermediateDirectories: true)
        let logKey = try CheckpointSigner(origin: Self.origin, seed: CheckpointSigner.loadOrCreateSeed(path: place.dir + "/checkpoint.key")).verifierKey
        let key = try NoteVerifierKey(parsing: logKey), usersKey = try UserProofVerification.usersKey(key)
        let a = try await LocalWitness(name: "a.witness.example", logKey: logKey)
        let policy = try WitnessPolicy(parsing: "witness a \(a.cosigner.verifierKey) http://127.0.0.1:\(a.port)\nquorum a\n")
        var witnessing = try WitnessingConfiguration(policy: policy)
        witnessing.interval = .milliseconds(100)
        let s = try await TestServer.start(storage, at: place) {
            $0.checkpointOrigin = Self.origin
            $0.witnessing = witnessing
            $0.indexInterval = .milliseconds(50)
        }
        defer { Task { await a.stop() } }
        #expect(try await Self.body(s, "/users/checkpoint").0 == 404)
        /// Waits until `/users/checkpoint` is cosigned past `size` entries; returns its size.
        func cosigned(past size: UInt64) async throws -> UInt64 {
            for _ in 0..<300 {
                let (status, text) = try await Self.body(s, "/users/checkpoint")
                if status == 200 {
                    let check = CheckpointVerification.check(Array(text.utf8), logKey: usersKey, policy: policy)
                    #expect((try? check.get()) != nil, "\(check)")
                    let cp = try Checkpoint(text: try SignedNote(parsing: Array(text.utf8)).text)
                    #expect(cp.origin == Self.origin + "/users")
                    if cp.size > size { return cp.size }
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            return size
        }
        try await VerifiableLogRouteTests.populate(s)
        let first = try await cosigned(past: 0)
        #expect(first > 0)
        // More events, more index entries: the witness needs the consistency proof from the size it holds.
        let r = try await s.call(.POST, "/v1/events", token: "importer-token", body: Fixture.array([Fixture.registered("bob", "laptop")]))
        try #require(r.status == 200 || r.status == 201, "\(r.body)")
        #expect(try await cosigned(past: first) > first)
        #expect(try await WitnessRecords.users.heldSize(s.server.ledger, "a") ?? 0 > first)
        // /health: the witness's hold and lag of the index log too, once it caught up with its head.
        var health: JSON = .null
        for _ in 0..<300 {
            let entries = try await s.server.ledger.usersTreeHead().size
            health = try #require(try await s.call(.GET, "/health", token: nil).json?["witnesses"]?.arrayValue?.first)
            if health["users"]?["size"] == .int(Int64(entries)) && health["users"]?["behind"] == .int(0) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(health["witness"] == .string("a") && health["users"]?["behind"] == .int(0), "\(health)")
        #expect((health["users"]?["size"]?.intValue ?? 0) > Int64(first) && health["users"]?["error"] == .null, "\(health)")
        // A proof once its index-log checkpoint is cosigned: it meets the policy; a policy
        // asking for another witness is not met.
        var result: Result<String, NoteError> = .failure(NoteError("no proof"))
        var proof: JSON = .null
        for _ in 0..<300 {
            proof = try #require(try await s.call(.GET, "/v1/users/bob/proof", token: "reader-token").json)
            result = UserProofVerification.check(proof, logKey: key, policy: policy)
            if (try? result.get()) != nil { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect((try? result.get())?.contains("quorum met by a") == true, "\(result)")
        let other = try Cosigner(name: "other.witness.example", seed: [UInt8](repeating: 7, count: 32))
        let strict = try WitnessPolicy(parsing: "witness o \(other.verifierKey)\nquorum o\n")
        guard case .failure(let e) = UserProofVerification.check(proof, logKey: key, policy: strict) else {
            Issue.record("a proof without the policy's cosignature verified")
            return
        }
        #expect(e.message.contains("quorum is not met"), "\(e.message)")
        try await s.stop()
        // prove-user on the store: at the same entry, with the same cosignatures.
        let cli = try ServeChild(["prove-user", "bob", "--json", "--origin", Self.origin],
                                 environment: ["AUTHLEDGER_STORE": place.store, "AUTHLEDGER_KEY_DIR": place.dir], collect: .stdout)
        cli.process.waitUntilExit()
        var printed: JSON?
        for _ in 0..<100 {
            printed = try? JSON.parse(Array(cli.output.utf8))
            if printed?["user"] != nil { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let offline = try #require(printed, "prove-user printed \(cli.output)")
        #expect(offline["usersCheckpoint"] == proof["usersCheckpoint"])
        #expect((try? UserProofVerification.check(offline, logKey: key, policy: policy).get()) != nil)
        s.removeStore()
    }

    /// Two servers of one PostgreSQL database: one sends to the witnesses, both serve the result.
    @Test func oneServerOfASharedStorePushes() async throws {
        guard StorageKind.all.contains(.postgres) else { return }
        let place = TestStore(.postgres)
        try FileManager.default.createDirectory(atPath: place.dir, withIntermediateDirectories: true)
        let logKey = try CheckpointSigner(origin: Self.origin, seed: CheckpointSigner.loadOrCreateSeed(path: place.dir + "/checkpoint.key")).verifierKey
        let a = try await LocalWitness(name: "a.witness.example", logKey: logKey)
        let policy = try WitnessPolicy(parsing: "witness a \(a.cosigner.verifierKey) http://127.0.0.1:\(a.port)\nquorum a\n")
        var witnessing = try WitnessingConfiguration(policy: policy)
        witnessing.interval = .milliseconds(100)
        let configure: (inout ServerConfiguration) -> Void = {
            $0.checkpointOrigin = Self.origin
            $0.witnessing = witnessing
        }
        let s1 = try await TestServer.start(.postgres, at: place, configure: configure)
        let s2 = try await TestServer.start(.postgres, at: place, configure: configure)
        defer { Task { await a.stop() } }
        try await VerifiableLogRouteTests.populate(s1)
        var served: [String] = []
        for _ in 0..<300 {
            served = [try await Self.body(s1, "/checkpoint").1, try await Self.body(s2, "/checkpoint").1]
            if served.allSatisfy({ $0.hasPrefix("\(Self.origin)\n300\n") }) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(served[0].hasPrefix("\(Self.origin)\n300\n") && served[0] == served[1])
        let leaders = [s1, s2].filter { $0.server.witnessCollector?.isLeader == true }
        #expect(leaders.count == 1)
        try await s1.stop()
        try await s2.stop()
    }

    @Test func withoutAPolicyLatestIsTheHeadsCheckpoint() async throws {
        try await withServer(configure: { $0.checkpointOrigin = Self.origin }) { s in
            try await VerifiableLogRouteTests.populate(s)
            let (s1, plain) = try await Self.body(s, "/checkpoint")
            let (s2, latest) = try await Self.body(s, "/checkpoint/latest")
            #expect(s1 == 200 && s2 == 200 && plain == latest && plain.hasPrefix("\(Self.origin)\n300\n"))
        }
    }
}
