import AuthLedger
import Testing

/// `authledger --version` prints the one version string of the build (`AuthLedgerVersion`).
struct VersionTests {
    @Test func versionPrintsTheBuildsVersionAndExitsZero() throws {
        let run = try CLI.run(["--version"])
        #expect(run.status == 0)
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == AuthLedgerVersion.current)
        #expect(AuthLedgerVersion.current.split(separator: ".").count == 3)
    }
}
