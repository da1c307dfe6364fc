@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import Testing

/// `Ledger.Configuration`: the library takes its settings as a value (no environment
/// reads), and the `authledger` tool maps its documented variables onto it.
@Suite struct LedgerConfigurationTests {
    @Test func keyFilesAndOriginComeFromTheConfigurationNotTheStoreDirectory() async throws {
        let store = Support.tempDir(), keys = Support.tempDir()
        let config = Ledger.Configuration(serverKeyFile: keys + "/otp.key",
                                          checkpointKeyFile: keys + "/cp.key", origin: "config.example/log")
        let ledger = try await Ledger(lmdb: store, configuration: config)
        try await ledger.importText(try String(contentsOf: Support.fixture("scenarios/03-device-management-cooling.jsonl"), encoding: .utf8))
        let size = try await ledger.head().seq
        _ = try ledger.secrets()
        let note = try await ledger.checkpoint(signer: try ledger.checkpointSigner())
        #expect(note.hasPrefix("config.example/log\n\(size)\n"))
        #expect(FileManager.default.fileExists(atPath: keys + "/otp.key"))
        #expect(FileManager.default.fileExists(atPath: keys + "/cp.key"))
        #expect(!FileManager.default.fileExists(atPath: store + "/server.key"))
        #expect(!FileManager.default.fileExists(atPath: store + "/checkpoint.key"))
        // An explicit origin still wins over the configured one.
        #expect(try ledger.checkpointSigner(origin: "other.example/log").origin == "other.example/log")
    }

    @Test func theDefaultsAreTheStoreDirectoryAndTheDefaultOrigin() async throws {
        let store = Support.tempDir()
        let ledger = try await Ledger(lmdb: store)
        _ = try ledger.secrets()
        #expect(try ledger.checkpointSigner().origin == CheckpointSigner.defaultOrigin)
        #expect(FileManager.default.fileExists(atPath: store + "/server.key"))
        #expect(FileManager.default.fileExists(atPath: store + "/checkpoint.key"))
        #expect(ledger.configuration.keyDirectory == store && ledger.path == store)
        // Without the LMDB driver's default there is no key directory unless one is configured (a PostgreSQL store).
        let pg = Ledger.Configuration()
        #expect(pg.keyDirectory == nil && pg.effectiveServerKeyFile == nil && pg.effectiveCheckpointKeyFile == nil)
        #expect(Ledger.Configuration(keyDirectory: "/k").effectiveServerKeyFile == "/k/server.key")
    }

    @Test func theToolsVariablesMapOntoTheConfiguration() {
        let env = ["AUTHLEDGER_KEY_DIR": "/keys", "AUTHLEDGER_SERVER_KEY_FILE": "/s.key", "AUTHLEDGER_CHECKPOINT_KEY_FILE": "",
                   "AUTHLEDGER_ORIGIN": "o.example/log", "AUTHLEDGER_REPLAY_PARTITIONS": "1", "AUTHLEDGER_PIPELINED_COMMIT": "1"]
        let c = Ledger.Configuration.fromEnvironment(env)
        #expect(c == Ledger.Configuration(keyDirectory: "/keys", serverKeyFile: "/s.key", checkpointKeyFile: nil,
                                          origin: "o.example/log", replayPartitions: 1, pipelinedCommit: true))
        #expect(c.effectiveCheckpointKeyFile == "/keys/checkpoint.key")
        #expect(Ledger.Configuration.fromEnvironment([:]) == Ledger.Configuration())
    }

    /// One partition or eight: the same maintained projections.
    @Test(arguments: [1, 8]) func replayWithAnyPartitionCountRebuildsTheSameState(_ parts: Int) async throws {
        let store = Support.tempDir()
        let ledger = try await Ledger(lmdb: store, configuration: .init(replayPartitions: parts))
        try await ledger.importText(try String(contentsOf: Support.fixture("scenarios/03-device-management-cooling.jsonl"), encoding: .utf8))
        let before = (try await ledger.devices(of: "carol", QueryOptions(asOf: t("2026-12-01T00:00:00Z"))).json, try await ledger.cooling(of: "carol", QueryOptions(asOf: t("2026-12-01T00:00:00Z"))).json)
        try await ledger.replay()
        #expect(try await ledger.devices(of: "carol", QueryOptions(asOf: t("2026-12-01T00:00:00Z"))).json == before.0)
        #expect(try await ledger.cooling(of: "carol", QueryOptions(asOf: t("2026-12-01T00:00:00Z"))).json == before.1)
        #expect(try await ledger.verify().seq > 0)
    }

    @Test func serveOnPostgreSQLWithoutKeyFilesIsRefusedAtStart() throws {
        let run = try CLI.exec(Support.binary, ["serve", "--store", "postgresql://nobody@127.0.0.1:1/none", "--port", "0", "--origin", "t.example/log"],
                               env: ["AUTHLEDGER_TOKENS": "0123456789abcdef0123456789abcdef:read", "AUTHLEDGER_KEY_DIR": "", "AUTHLEDGER_SERVER_KEY_FILE": "", "AUTHLEDGER_CHECKPOINT_KEY_FILE": ""])
        #expect(run.status == 2)
        #expect(run.stderr.contains("a PostgreSQL store keeps its key files in AUTHLEDGER_KEY_DIR"))
    }
}
