import AuthLedger
import Foundation
import Testing

/// The auditor's workflow of docs/VERIFIABLE-LOG.md through the CLI and the offline
/// verifier `tools/verify-proof.py`: keep a checkpoint, append, prove consistency to the
/// new one, prove an event included; and every forgery refused.
@Suite struct VerifiableLogCLITests {
    struct Store {
        let dir: String
        var env: [String: String] {
            ["AUTHLEDGER_STORE": dir + "/store", "AUTHLEDGER_CHECKPOINT_KEY_FILE": dir + "/checkpoint.key",
             "AUTHLEDGER_ORIGIN": "audit.example/ledger"]
        }

        func run(_ args: String...) throws -> CLIRun { try CLI.exec(Support.binary, args, env: env) }

        func verifier(_ args: [String]) throws -> CLIRun {
            try CLI.exec("/usr/bin/env", ["python3", Support.root.appendingPathComponent("tools/verify-proof.py").path] + args)
        }

        func write(_ name: String, _ text: String) throws -> String {
            let path = dir + "/" + name
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
    }

    static func events(_ range: ClosedRange<Int>) -> String {
        range.map { k in
            k == 1
                ? line("device.registered", at: "2026-03-01T09:00:00Z",
                       data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)
                : line("device.accessed", at: "2026-03-01T09:00:00Z", data: #"{"deviceId":"phone"}"#, meta: #"{"requestId":"r\#(k)"}"#)
        }.joined(separator: "\n") + "\n"
    }

    @Test func theAuditorsWorkflowChecksOutAndForgeriesDoNot() throws {
        let s = Store(dir: Support.tempDir("vlog-cli"))
        // A key whose verifier key holds "+" in its base64 part (verifiers must split on the first two "+" only)
        let seed = try #require((0..<UInt8(255)).lazy.map { [UInt8](repeating: $0, count: 32) }.first { seed in
            (try? CheckpointSigner(origin: "audit.example/ledger", seed: seed))?.verifierKey.split(separator: "+").count ?? 0 > 3
        })
        FileManager.default.createFile(atPath: s.dir + "/checkpoint.key", contents: Data(seed), attributes: [.posixPermissions: 0o600])
        #expect(try s.run("import", try s.write("a.jsonl", Self.events(1...11))).status == 0)
        let vkey = try s.run("checkpoint", "--vkey").stdout.trimmingCharacters(in: .newlines)
        #expect(vkey.hasPrefix("audit.example/ledger+"))
        // 1. Keep the checkpoint you saw
        let first = try s.run("checkpoint")
        #expect(first.status == 0 && first.stdout.hasPrefix("audit.example/ledger\n11\n"))
        let kept = try s.write("kept.checkpoint", first.stdout)
        let opened = try s.verifier(["checkpoint", kept, "--vkey", vkey])
        #expect(opened.status == 0 && opened.stdout.hasPrefix("ok: checkpoint of audit.example/ledger: 11 events"), "\(opened.stderr)")
        // 2. Later (the log grew), ask for a consistency proof from it to the new head
        #expect(try s.run("import", try s.write("b.jsonl", Self.events(12...30))).status == 0)
        let consistency = try s.run("prove-consistency", "11", "30", "--json")
        #expect(consistency.json?["oldSize"]?.intValue == 11 && consistency.json?["treeSize"]?.intValue == 30)
        let proofFile = try s.write("consistency.json", consistency.stdout)
        let extended = try s.verifier(["consistency", proofFile, "--vkey", vkey, "--old", kept])
        #expect(extended.status == 0 && extended.stdout.contains("of 30 events extends the one of 11 events"), "\(extended.stderr)")
        // 3. Check that an event is included
        let inclusion = try s.run("prove", "7", "--json")
        #expect(inclusion.json?["leafIndex"]?.intValue == 6 && inclusion.json?["treeSize"]?.intValue == 30)
        let inclusionFile = try s.write("inclusion.json", inclusion.stdout)
        let event = try s.write("event.json", String(try s.run("export", "--from", "7").stdout.split(separator: "\n")[0]) + "\n")
        let included = try s.verifier(["inclusion", inclusionFile, "--vkey", vkey, "--event", event])
        #expect(included.status == 0 && included.stdout.contains("event seq 7 is in the log"), "\(included.stderr)")
        // …also an event with personal values (its leaf is over their commitments, not the values)
        let firstLine = String(try s.run("export").stdout.split(separator: "\n")[0]) + "\n"
        #expect(firstLine.contains("\"disclosures\":{\"/data/name\""))
        let personal = try s.verifier(["inclusion", try s.write("inclusion1.json", try s.run("prove", "1", "--json").stdout),
                                       "--vkey", vkey, "--event", try s.write("event1.json", firstLine)])
        #expect(personal.status == 0 && personal.stdout.contains("event seq 1 is in the log"), "\(personal.stderr)")

        // Forgeries: another event, a changed proof hash, a rewritten history, another key
        let other = try s.write("other.json", try s.run("export", "--from", "8").stdout.split(separator: "\n")[0]
            .replacingOccurrences(of: "\"seq\":8", with: "\"seq\":7") + "\n")
        #expect(try s.verifier(["inclusion", inclusionFile, "--vkey", vkey, "--event", other]).status == 1)
        var forged = try #require(inclusion.json)
        if case var .object(m) = forged, let k = m.firstIndex(where: { $0.0 == "proof" }), case var .array(hashes) = m[k].1,
           case let .string(h) = hashes[0] {
            hashes[0] = .string((h.first == "A" ? "B" : "A") + h.dropFirst())
            m[k].1 = .array(hashes)
            forged = .object(m)
        }
        #expect(try s.verifier(["inclusion", try s.write("forged.json", forged.serialized()), "--vkey", vkey, "--event", event]).status == 1)
        // A checkpoint of a different history (another store, same key and origin) is not consistent with the kept one
        let s2 = Store(dir: Support.tempDir("vlog-cli"))
        try FileManager.default.copyItem(atPath: s.dir + "/checkpoint.key", toPath: s2.dir + "/checkpoint.key")
        #expect(try s2.run("import", try s2.write("c.jsonl", Self.events(1...30).replacingOccurrences(of: "r5\"", with: "r5x\""))).status == 0)
        let rewritten = try s2.write("rewritten.json", try s2.run("prove-consistency", "11", "30", "--json").stdout)
        let refused = try s.verifier(["consistency", rewritten, "--vkey", vkey, "--old", kept])
        #expect(refused.status == 1 && refused.stderr.contains("does not verify"))
        // A checkpoint signed by another key is refused
        let s3 = Store(dir: Support.tempDir("vlog-cli"))
        let otherKey = try s3.run("checkpoint", "--vkey").stdout.trimmingCharacters(in: .newlines)
        #expect(try s.verifier(["checkpoint", kept, "--vkey", otherKey]).status == 1)
        // Text output names the proof and carries the checkpoint
        let text = try s.run("prove", "7")
        #expect(text.status == 0 && text.stdout.contains("seq 7 is leaf 6 of the tree of 30 events") && text.stdout.contains("audit.example/ledger\n30\n"))
    }

    @Test func badArgumentsAreUsageOrInvalid() throws {
        let s = Store(dir: Support.tempDir("vlog-cli"))
        #expect(try s.run("import", try s.write("a.jsonl", Self.events(1...3))).status == 0)
        let beyond = try s.run("prove", "4")
        #expect(beyond.status == 1 && beyond.stderr.hasPrefix("error: invalid_event"))
        #expect(try s.run("prove-consistency", "3", "2").status == 1)
        #expect(try s.run("checkpoint", "--size", "4").status == 1)
        #expect(try s.run("prove", "x").status == 2)
        let origin = try s.run("checkpoint", "--origin", "has space")
        #expect(origin.status == 1 && origin.stderr.contains("origin"))
        // The default origin works but warns
        let defaulted = try CLI.exec(Support.binary, ["checkpoint"], env: ["AUTHLEDGER_STORE": s.dir + "/store", "AUTHLEDGER_ORIGIN": ""])
        #expect(defaulted.status == 0 && defaulted.stdout.hasPrefix(CheckpointSigner.defaultOrigin + "\n3\n") && defaulted.stderr.contains("warning"))
        // The key file is created beside the log, 0600
        let attributes = try FileManager.default.attributesOfItem(atPath: s.dir + "/store/checkpoint.key")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }
}
