import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import AuthLedgerTestSupport
import Foundation
import Testing

/// Mistakes of the setup are named for what they are (`configuration_error`, exit 2 as for
/// a usage error), not `storage_error`: a program not built, a store path that is a file or
/// cannot be made, a malformed store URL, a key file of the wrong form or in a missing
/// directory. A store that is there but broken stays a `storage_error`.
@Suite(.serialized) struct ConfigurationErrorTests {
    /// Runs the CLI; the key variables of the test process's environment are cleared.
    static func al(_ args: [String], env: [String: String] = [:]) throws -> CLIRun {
        try CLI.exec(Support.binary, args, env: ["AUTHLEDGER_KEY_DIR": "", "AUTHLEDGER_SERVER_KEY_FILE": "",
                                                  "AUTHLEDGER_CHECKPOINT_KEY_FILE": ""].merging(env) { $1 })
    }

    /// A setup mistake: exit 2, `error: configuration_error: …`, never storage_error, nothing on stdout.
    static func expectSetupError(_ r: CLIRun, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == 2, "\(r.status) \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.hasPrefix("error: configuration_error: "), "\(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains(what), "\(r.stderr)", sourceLocation: sourceLocation)
        #expect(!r.stderr.contains("storage_error"), sourceLocation: sourceLocation)
        #expect(r.stdout.isEmpty, sourceLocation: sourceLocation)
    }

    @Test func benchWithoutItsBinaryNamesTheBuildCommand() throws {
        // Given the CLI alone in a directory (a hard link: no authledger-bench beside it)
        let dir = Support.root.appendingPathComponent(".build/test-bench-missing-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lone = dir + "/authledger"
        try FileManager.default.linkItem(atPath: Support.binary, toPath: lone)
        // When `bench` is run
        let r = try CLI.exec(lone, ["bench", "--events", "10000"])
        // Then it is a setup error naming the build command
        Self.expectSetupError(r, "swift build -c release --product authledger-bench")
    }

    @Test func aStorePathThatIsAFileOrCannotBeMadeIsASetupError() async throws {
        let dir = Support.tempDir("authledger-config")
        let file = dir + "/i-am-a-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        // A file as the store
        Self.expectSetupError(try Self.al(["devices", "alice", "--store", file]), "not a directory")
        // A store under a file: its directory cannot be made
        Self.expectSetupError(try Self.al(["devices", "alice", "--store", file + "/store"]), "cannot create the store directory")
        // Under a directory no one may create in (procfs)
        Self.expectSetupError(try Self.al(["devices", "alice", "--store", "/proc/authledger-store"]), "cannot create the store directory")
        // Neither message names the path
        #expect(!(try Self.al(["devices", "alice", "--store", file])).stderr.contains("i-am-a-file"))
        // The library says the same
        await #expect(throws: LedgerError(.configurationError, "the store path is not a directory")) { _ = try await Ledger(lmdb: file) }
    }

    @Test(arguments: ["postgresql://", "postgresql://host/db", "postgresql://u:secret@h:99999/db", "postgresql://u:secret@h/db?x=1"])
    func aMalformedStoreURLIsASetupError(_ url: String) throws {
        let r = try Self.al(["devices", "alice", "--store", url])
        Self.expectSetupError(r, "invalid PostgreSQL store URL")
        #expect(!r.stderr.contains("secret"))
    }

    @Test func keyFilesOfTheWrongFormOrInAMissingDirectoryAreSetupErrors() throws {
        let dir = Support.tempDir("authledger-config")
        let store = dir + "/store"
        #expect(try Self.al(["register", "alice", "phone", "--name", "Alice Phone", "--store", store]).status == 0)
        // A checkpoint key file that is not 32 bytes
        let short = dir + "/short.key"
        #expect(FileManager.default.createFile(atPath: short, contents: Data("not a key".utf8)))
        Self.expectSetupError(try Self.al(["checkpoint", "--store", store], env: ["AUTHLEDGER_CHECKPOINT_KEY_FILE": short]), "32-byte")
        // A checkpoint key file in a directory that does not exist
        Self.expectSetupError(try Self.al(["checkpoint", "--store", store], env: ["AUTHLEDGER_CHECKPOINT_KEY_FILE": dir + "/missing/checkpoint.key"]),
                              "cannot create the checkpoint key file")
        // A checkpoint key file that is a directory
        Self.expectSetupError(try Self.al(["checkpoint", "--store", store], env: ["AUTHLEDGER_CHECKPOINT_KEY_FILE": dir]),
                              "cannot create the checkpoint key file")
        // The OTP server key in a directory that does not exist
        Self.expectSetupError(try Self.al(["send-otp", "alice", "--channel", "email", "--target", "a@example.com", "--store", store],
                                          env: ["AUTHLEDGER_SERVER_KEY_FILE": dir + "/missing/server.key"]), "server key")
        // Nothing was appended by any of them
        #expect(try Self.al(["history", "alice", "--store", store]).stdout.split(separator: "\n").count == 1)
    }

    @Test func aGarbageStoreStaysAStorageError() throws {
        // A store that is there but cannot be read is the store's failure, not the setup's
        let dir = Support.tempDir("authledger-config")
        #expect(FileManager.default.createFile(atPath: dir + "/data.mdb", contents: Data(repeating: 0x5A, count: 65_536)))
        let r = try Self.al(["devices", "alice", "--store", dir])
        #expect(r.status == 1 && r.stderr.hasPrefix("error: storage_error: "), "\(r.stderr)")
    }
}
