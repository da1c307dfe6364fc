import Foundation
import AuthLedger
import AuthLedgerLMDB
import Testing

/// docs/WALKTHROUGH.md's second part (a device's life with a link and a key) runs as printed.
@Suite struct WalkthroughProofTests {
    @Test func theLinkAndKeyWalkthroughRunsAsWritten() throws {
        // Given the second shell block of docs/WALKTHROUGH.md
        let md = try String(contentsOf: Support.root.appendingPathComponent("docs/WALKTHROUGH.md"), encoding: .utf8)
        let part = try #require(md.range(of: "## A device's life with a link and a key"))
        let start = try #require(md.range(of: "```sh\n", range: part.upperBound..<md.endIndex))
        let end = try #require(md.range(of: "```", range: start.upperBound..<md.endIndex))
        let block = String(md[start.upperBound..<end.lowerBound])
        // When it runs in bash, in the package root, with its own temporary directory
        let r = try CLI.exec("/bin/bash", ["-eu", "-c", "cd '\(Support.root.path)' && " + block],
                             env: ["TMPDIR": Support.tempDir("authledger-walkthrough-keys")])
        // Then it succeeds and shows what the walkthrough says
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("appended seq 3 device.registered"))
        #expect(r.stderr.contains("error: link_invalid:"))
        #expect(r.stderr.contains("error: signature_required:"))
        #expect(r.stdout.contains("appended seq 6 challenge.approved"))
        #expect(r.stdout.contains("appended seq 7 device.key_rotated"))
        #expect(r.stdout.contains("ok: 7 events verified"))
        #expect(r.stdout.contains(", 2 signatures"))
    }
}
