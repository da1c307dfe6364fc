import AsyncHTTPClient
import AuthLedger
import AuthLedgerCore
@testable import AuthLedgerServer
import AuthLedgerTestSupport
import AuthLedgerWitness
import Foundation
import Testing

/// User proofs over HTTP (reference section 14): signing the log's checkpoint first gives the
/// index log its entry; `/users/checkpoint` and `/users/tile/…` serve that log; a user's proof
/// verifies with the log's verifier key alone, and a proof edited to hide an event does not.
@Suite(.timeLimit(.minutes(2))) struct UserProofRouteTests {
    @Test(arguments: StorageKind.all) func theIndexLogAndAUsersProof(_ storage: StorageKind) async throws {
        try await withServer(storage, configure: { $0.checkpointOrigin = "test.example/log"; $0.indexInterval = .seconds(3600) }) { s in
            #expect(try await s.call(.GET, "/users/checkpoint", token: "auditor-token").status == 404)
            try await VerifiableLogRouteTests.populate(s)
            // Signing the log's checkpoint appended the index log's entry for size 300 first.
            let cp = String(decoding: try await VerifiableLogRouteTests.raw(s, "/checkpoint").body, as: UTF8.self)
            let logRoot = try #require(Data(base64Encoded: String(cp.split(separator: "\n")[2])))
            let users = try await VerifiableLogRouteTests.raw(s, "/users/checkpoint")
            let note = String(decoding: users.body, as: UTF8.self)
            #expect(users.status == 200 && note.hasPrefix("test.example/log/users\n1\n") && note.contains("\u{2014} test.example/log/users "))
            let entries = VerifiableLogRouteTests.entries(try await VerifiableLogRouteTests.raw(s, "/users/tile/entries/000.p/1").body)
            #expect(entries.count == 1 && entries[0].count == 72)
            #expect(entries[0][0..<8].reduce(0) { $0 << 8 | UInt64($1) } == 300 && Array(entries[0][8..<40]) == Array(logRoot))
            let tile = try await VerifiableLogRouteTests.raw(s, "/users/tile/0/000.p/1")
            #expect(tile.body == MerkleTree.leafHash(entries[0]).bytes)
            #expect(try await VerifiableLogRouteTests.raw(s, "/users/tile/0/000.p/2").status == 404)
            #expect(try await s.call(.GET, "/users/checkpoint", token: "reader-token").status == 403)

            let vkey = try NoteVerifierKey(parsing: try s.server.ledger.checkpointSigner(origin: "test.example/log").verifierKey)
            let alice = try await s.call(.GET, "/v1/users/alice/proof", token: "reader-token")
            #expect(alice.status == 200 && alice["count"]?.intValue == 300 && alice["size"]?.intValue == 300)
            let proof = try #require(alice.json)
            #expect(throws: Never.self) { try UserProofVerification.check(proof, logKey: vkey).get() }
            // One event hidden: the count no longer folds to the committed index root.
            let hidden = JSON.object(proof.objectValue!.map { $0.0 == "count" ? ($0.0, .int(299)) : $0 })
            #expect(throws: NoteError.self) { try UserProofVerification.check(hidden, logKey: vkey).get() }
            // Another key's signature is refused.
            let other = try NoteVerifierKey(name: "test.example/log", type: 1, publicKey: Array(repeating: 9, count: 32))
            #expect(throws: NoteError.self) { try UserProofVerification.check(proof, logKey: other).get() }
            // A user without events: a non-inclusion proof that verifies too.
            let nobody = try await s.call(.GET, "/v1/users/nobody/proof", token: "reader-token")
            #expect(nobody.status == 200 && nobody["count"]?.intValue == 0)
            #expect(throws: Never.self) { try UserProofVerification.check(try #require(nobody.json), logKey: vkey).get() }
        }
    }
}
