import AuthLedger
import AuthLedgerWitness
import Foundation
import Testing

/// User proofs through the CLI (reference section 14): `prove-user` appends the index log's
/// entry and prints the proof, `verify-user` checks it with the log's verifier key, a proof
/// that hides an event or names another user is refused, and `checkpoint --users` signs the
/// index log under its own origin; `verify-user --witness-policy` asks for the index
/// checkpoint's cosignatures.
@Suite struct UserProofCLITests {
    /// The proof with one event fewer claimed.
    func hidden(_ proof: String, _ s: VerifiableLogCLITests.Store) throws -> String {
        try s.write("hidden-\(proof.count).json", proof.replacingOccurrences(of: "\"count\":11", with: "\"count\":10"))
    }

    @Test func proveUserVerifiesAndAnEditedProofDoesNot() throws {
        let s = VerifiableLogCLITests.Store(dir: Support.tempDir("user-proof-cli"))
        #expect(try s.run("import", try s.write("a.jsonl", VerifiableLogCLITests.events(1...11))).status == 0)
        let vkey = try s.run("checkpoint", "--vkey").stdout.trimmingCharacters(in: .newlines)
        let usersKey = try s.run("checkpoint", "--vkey", "--users").stdout.trimmingCharacters(in: .newlines)
        #expect(usersKey.hasPrefix("audit.example/ledger/users+") && usersKey.split(separator: "+").last == vkey.split(separator: "+").last)
        let proof = try s.run("prove-user", "alice", "--json")
        #expect(proof.status == 0 && proof.json?["count"]?.intValue == 11 && proof.json?["size"]?.intValue == 11, "\(proof.stderr)")
        let ok = try s.run("verify-user", try s.write("alice.json", proof.stdout), "--vkey", vkey)
        #expect(ok.status == 0 && ok.stdout.contains("alice has exactly 11 events in the log of 11"), "\(ok.stderr)")
        // The offline verifier agrees, and with alice's events recomputes her stream hash;
        // a history with one event left out is caught.
        let export = try s.run("export").stdout
        let offline = try s.verifier(["user", try s.write("alice2.json", proof.stdout), "--vkey", vkey, "--events", try s.write("all.jsonl", export)])
        #expect(offline.status == 0 && offline.stdout.contains("the 11 events given are all of them"), "\(offline.stderr)")
        var lines = export.split(separator: "\n")
        lines.remove(at: 5)
        let short = try s.verifier(["user", try s.write("alice3.json", proof.stdout), "--vkey", vkey,
                                    "--events", try s.write("short.jsonl", lines.joined(separator: "\n") + "\n")])
        #expect(short.status != 0 && short.stderr.contains("not complete"), "\(short.stdout)")
        let forged = try s.verifier(["user", hidden(proof.stdout, s), "--vkey", vkey])
        #expect(forged.status != 0, "\(forged.stdout)")
        // The index log signed under its own origin, with one entry (prove-user appended it).
        let users = try s.run("checkpoint", "--users")
        #expect(users.status == 0 && users.stdout.hasPrefix("audit.example/ledger/users\n1\n"), "\(users.stderr)")
        // Hiding an event, or passing alice's proof off as bob's: refused.
        let hidden = try s.write("hidden.json", proof.stdout.replacingOccurrences(of: "\"count\":11", with: "\"count\":10"))
        let refused = try s.run("verify-user", hidden, "--vkey", vkey)
        #expect(refused.status == 1 && refused.stderr.contains("FAIL"), "\(refused.stdout)")
        let bob = try s.write("bob.json", proof.stdout.replacingOccurrences(of: "\"user\":\"alice\"", with: "\"user\":\"bob\""))
        #expect(try s.run("verify-user", bob, "--vkey", vkey).status == 1)
        // After more events the next proof is at a new entry.
        #expect(try s.run("import", try s.write("b.jsonl", VerifiableLogCLITests.events(12...14))).status == 0)
        let later = try s.run("prove-user", "alice", "--json")
        #expect(later.json?["count"]?.intValue == 14 && later.json?["entry"]?["index"]?.intValue == 1)
        #expect(try s.run("verify-user", try s.write("later.json", later.stdout), "--vkey", vkey).status == 0)
        #expect(try s.run("verify").status == 0)
        let audit = try s.run("audit-index")
        #expect(audit.status == 0 && audit.stdout.contains("ok: 2 index log entries recomputed from the log (the newest at size 14)"), "\(audit.stderr)")
    }

    @Test func verifyUserWithAWitnessPolicyNeedsTheQuorumsCosignatures() throws {
        let s = VerifiableLogCLITests.Store(dir: Support.tempDir("user-proof-policy"))
        #expect(try s.run("import", try s.write("a.jsonl", VerifiableLogCLITests.events(1...5))).status == 0)
        let vkey = try s.run("checkpoint", "--vkey").stdout.trimmingCharacters(in: .newlines)
        let proof = try s.run("prove-user", "alice", "--json")
        try #require(proof.status == 0, "\(proof.stderr)")
        let witness = try Cosigner(name: "w.witness.example", seed: [UInt8](repeating: 9, count: 32))
        let policy = try s.write("policy", "witness w \(witness.verifierKey)\nquorum w\n")
        // The proof as prove-user prints it: signed by the log, cosigned by no witness.
        let bare = try s.write("bare.json", proof.stdout)
        #expect(try s.run("verify-user", bare, "--vkey", vkey).status == 0)
        let refused = try s.run("verify-user", bare, "--vkey", vkey, "--witness-policy", policy)
        #expect(refused.status == 1 && refused.stderr.contains("usersCheckpoint: the quorum is not met"), "\(refused.stdout)\(refused.stderr)")
        // The witness's cosignature added to the index checkpoint: the quorum is met.
        var object = try #require(try JSONSerialization.jsonObject(with: Data(proof.stdout.utf8)) as? [String: Any])
        let users = try #require(object["usersCheckpoint"] as? String)
        object["usersCheckpoint"] = users + (try witness.cosign(text: try SignedNote(parsing: Array(users.utf8)).text, time: 1_700_000_000))
        let cosigned = try s.write("cosigned.json", String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
        let ok = try s.run("verify-user", cosigned, "--vkey", vkey, "--witness-policy", policy)
        #expect(ok.status == 0 && ok.stdout.contains("quorum met by w"), "\(ok.stderr)")
        // The offline verifier agrees on both.
        let offline = try s.verifier(["user", cosigned, "--vkey", vkey, "--witness-policy", policy])
        #expect(offline.status == 0 && offline.stdout.contains("usersCheckpoint; quorum met by w"), "\(offline.stderr)")
        let offlineBare = try s.verifier(["user", bare, "--vkey", vkey, "--witness-policy", policy])
        #expect(offlineBare.status == 1 && offlineBare.stderr.contains("quorum is not met"), "\(offlineBare.stdout)")
        // A cosignature of the log's checkpoint (another text) does not count for the index log.
        object["usersCheckpoint"] = users + (try witness.cosign(text: try SignedNote(parsing: Array((object["checkpoint"] as? String ?? "").utf8)).text, time: 1))
        let wrong = try s.write("wrong.json", String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
        #expect(try s.run("verify-user", wrong, "--vkey", vkey, "--witness-policy", policy).status == 1)
        let missing = try s.run("verify-user", cosigned, "--vkey", vkey, "--witness-policy", s.dir + "/no-such-policy")
        #expect(missing.status != 0 && missing.stderr.contains("cannot read --witness-policy"), "\(missing.stderr)")
    }
}
