@_spi(Storage) import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

/// A PostgreSQL store has no directory beside its log: every command that needs a key
/// file refuses at once, as a usage error (exit 2) naming AUTHLEDGER_KEY_DIR and the
/// documentation, instead of a storage_error at the first code or checkpoint.
@Suite(.serialized) struct KeyConfigurationCLITests {
    /// No key variable set (the test process's own environment may hold some).
    static let noKeys = ["AUTHLEDGER_KEY_DIR": "", "AUTHLEDGER_SERVER_KEY_FILE": "", "AUTHLEDGER_CHECKPOINT_KEY_FILE": ""]

    /// The commands that need a key file, with their arguments.
    static let needingKeys: [[String]] = [
        ["send-otp", "alice", "--channel", "email", "--target", "alice@example.com"],
        ["verify-otp", "alice", "otp-1", "123456"],
        ["checkpoint"], ["checkpoint", "--vkey"], ["prove", "1"], ["prove-consistency", "1", "1"],
        ["serve", "--port", "0"],
    ]

    @Test(arguments: needingKeys) func aCommandNeedingAKeyOnPostgreSQLWithoutAKeyDirectoryIsAUsageError(_ args: [String]) throws {
        // An unreachable database: the refusal comes before any connection is tried
        let run = try CLI.exec(Support.binary, args + ["--store", "postgresql://nobody@127.0.0.1:1/none"],
                               env: Self.noKeys.merging(["AUTHLEDGER_TOKENS": "0123456789abcdef0123456789abcdef:read"]) { $1 })
        #expect(run.status == 2, "\(args[0]): \(run.status) \(run.stderr)")
        #expect(run.stderr.contains("\(args[0]) needs the"), "\(run.stderr)")
        #expect(run.stderr.contains("AUTHLEDGER_KEY_DIR"))
        #expect(run.stderr.contains("docs/POSTGRESQL.md"))
        #expect(!run.stderr.contains("storage_error"))
        #expect(run.stdout.isEmpty)
    }

    @Test func aServerKeyFileAloneIsEnoughForTheOTPCommandsButNotForCheckpoints() throws {
        let env = Self.noKeys.merging(["AUTHLEDGER_SERVER_KEY_FILE": NSTemporaryDirectory() + "authledger-key-\(UUID().uuidString)"]) { $1 }
        let url = "postgresql://nobody@127.0.0.1:1/none"
        // send-otp gets past the check and fails only at the (unreachable) store: exit 1, storage_error
        let otp = try CLI.exec(Support.binary, ["send-otp", "alice", "--channel", "email", "--target", "a@example.com", "--store", url], env: env)
        #expect(otp.status == 1 && otp.stderr.hasPrefix("error: storage_error: "), "\(otp.stderr)")
        // checkpoint still lacks its key
        let cp = try CLI.exec(Support.binary, ["checkpoint", "--store", url], env: env)
        #expect(cp.status == 2 && cp.stderr.contains("the checkpoint key") && !cp.stderr.contains("the OTP server key"), "\(cp.stderr)")
    }

    @Test(.enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set"))
    func withAKeyDirectoryTheCommandsWorkOnPostgreSQL() throws {
        let store = StorageKind.postgres.freshStore()
        let keys = StorageKind.postgres.keyDirectory(for: store)
        let env = Self.noKeys.merging(["AUTHLEDGER_KEY_DIR": keys]) { $1 }
        let now = ["--now", "2026-06-01T09:00:00Z"]
        var run = try CLI.exec(Support.binary, ["send-otp", "alice", "--channel", "email", "--target", "alice@example.com", "--json", "--store", store] + now, env: env)
        #expect(run.status == 0, "\(run.stderr)")
        let otp = try #require(run.json?["otpId"]?.stringValue)
        let code = try #require(run.json?["code"]?.stringValue)
        run = try CLI.exec(Support.binary, ["verify-otp", "alice", otp, code, "--store", store] + now, env: env)
        #expect(run.status == 0, "\(run.stderr)")
        run = try CLI.exec(Support.binary, ["checkpoint", "--store", store, "--origin", "test.example/log"], env: env)
        #expect(run.status == 0 && run.stdout.hasPrefix("test.example/log\n2\n"), "\(run.stdout) \(run.stderr)")
        #expect(FileManager.default.fileExists(atPath: keys + "/server.key"))
        #expect(FileManager.default.fileExists(atPath: keys + "/checkpoint.key"))
    }
}
