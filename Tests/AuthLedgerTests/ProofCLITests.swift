import Foundation
import AuthLedger
import AuthLedgerLMDB
import Testing

/// The device-proof verbs of the CLI (reference sections 4.3 and 7): the link token is
/// printed once and kept nowhere; bad keys, signatures and tokens are refused with their
/// code (and, for files, their line), appending nothing.
@Suite(.serialized) struct ProofCLITests {
    let store = Support.tempDir("authledger-proof-cli") + "/store"

    func al(_ args: String..., now: String? = nil, stdin: String? = nil) throws -> CLIRun {
        var a = Array(args) + ["--store", store]
        if let now { a += ["--now", now] }
        return try CLI.run(a, stdin: stdin)
    }

    /// Every byte of every file under `dir`.
    func allBytes(_ dir: String) -> [[UInt8]] {
        let fm = FileManager.default
        return (fm.enumerator(atPath: dir)?.allObjects as? [String] ?? []).compactMap { fm.contents(atPath: dir + "/" + $0).map { Array($0) } }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle { return true }
        return false
    }

    @Test func theLinkTokenIsPrintedOnceAndStoredNowhere() throws {
        #expect(try al("register", "carol", "phone", "--name", "Carol Phone", now: "2026-05-01T10:00:00Z").status == 0)
        let r = try al("request-verification", "carol", "laptop", "--name", "Carol Laptop", "--json", now: "2026-05-01T10:01:00Z")
        #expect(r.status == 0, "\(r.stderr)")
        let token = try #require(r.json?["token"]?.stringValue)
        let vid = try #require(r.json?["verificationId"]?.stringValue)
        // No store file, no export line holds the token
        let needle = Array(token.utf8)
        for bytes in allBytes(store) {
            #expect(!Self.contains(bytes, needle))
        }
        #expect(!(try al("export").stdout.contains(token)))
        // Redeemed from stdin, once
        let done = try al("redeem-link", "-", "--json", now: "2026-05-01T10:02:00Z", stdin: token + "\n")
        #expect(done.status == 0, "\(done.stderr)")
        #expect(done.json?["verificationId"] == .string(vid))
        // Options before `--`: a token may start with "-"
        let again = try CLI.run(["redeem-link", "--store", store, "--now", "2026-05-01T10:03:00Z", "--", token])
        #expect(again.status == 1 && again.stderr.hasPrefix("error: link_invalid:"))
        #expect(!again.stderr.contains(token))
        let bad = try al("redeem-link", "not-a-token", now: "2026-05-01T10:03:00Z")
        #expect(bad.status == 1 && bad.stderr.hasPrefix("error: invalid_event:"))
    }

    @Test func anImportWithABadKeyOrSignatureNamesItsLineAndAppendsNothing() throws {
        let dir = Support.tempDir("authledger-proof-cli-files")
        let key = ProofKey(.edDSA)
        let lines = [
            line("device.registered", user: "dan", at: "2026-05-01T09:00:00Z", data: #"{"deviceId":"phone","name":"Dan Phone","kind":"mobile","binding":"permanent","via":"initial","publicKey":\#(key.jwkText)}"#),
            line("challenge.issued", user: "dan", at: "2026-05-01T09:01:00Z", data: #"{"challengeId":"c1","action":"login","requestingDeviceId":"laptop","expiresAt":"2026-05-01T09:02:00Z","nonce":"AAECAwQFBgcICQoLDA0ODw"}"#),
            line("challenge.approved", user: "dan", at: "2026-05-01T09:01:10Z", data: #"{"challengeId":"c1","approverDeviceId":"phone","signature":"\#(ProofKey(.edDSA).answer(user: "dan", challengeId: "c1", decision: "approve", deviceId: "phone", nonce: "AAECAwQFBgcICQoLDA0ODw"))"}"#),
        ]
        let forged = dir + "/forged.jsonl"
        try (["# a forged approval"] + lines).joined(separator: "\n").write(toFile: forged, atomically: true, encoding: .utf8)
        let r = try al("import", forged)
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: signature_invalid: \(forged) line 4:"), "\(r.stderr)")
        let badKey = dir + "/bad-key.jsonl"
        try [lines[0].replacingOccurrences(of: #""kty":"OKP""#, with: #""kty":"EC""#)].joined().write(toFile: badKey, atomically: true, encoding: .utf8)
        let k = try al("import", badKey)
        #expect(k.status == 1 && k.stderr.hasPrefix("error: invalid_event: \(badKey) line 1:"), "\(k.stderr)")
        #expect(try al("export").stdout.isEmpty)
        // A signed approval made with the CLI verbs passes verify
        let good = dir + "/good.jsonl"
        try lines[0...1].joined(separator: "\n").write(toFile: good, atomically: true, encoding: .utf8)
        #expect(try al("import", good).status == 0)
        let sig = key.answer(user: "dan", challengeId: "c1", decision: "approve", deviceId: "phone", nonce: "AAECAwQFBgcICQoLDA0ODw")
        let ok = try al("approve", "dan", "c1", "--device", "phone", "--signature", sig, now: "2026-05-01T09:01:20Z")
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(try al("verify").stdout.contains("ok: 3 events verified"))
        let bad = try al("rotate-key", "dan", "phone", "--public-key", #"{"kty":"OKP","crv":"Ed25519","x":"short"}"#, "--signature", "a.b.c", now: "2026-05-01T09:02:00Z")
        #expect(bad.status == 1 && bad.stderr.hasPrefix("error: invalid_event:"))
    }
}
