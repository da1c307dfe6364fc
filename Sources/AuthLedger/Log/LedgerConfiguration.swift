import AuthLedgerCore
import Foundation

extension Ledger {
    /// How a ledger is opened, whatever the driver: where the files beside the log are, and
    /// the few settings of the log itself (the store itself is the driver's argument:
    /// `Ledger(lmdb:configuration:)`, `Ledger(postgres:configuration:)`). A value: the library
    /// reads no environment variable; the `authledger` tool builds one with
    /// ``fromEnvironment(_:)``.
    public struct Configuration: Sendable, Equatable {
        /// The directory of the files kept beside the log (the OTP server key, the
        /// checkpoint key, the Shared Signals keys). nil: the LMDB store directory when the
        /// LMDB driver opens it; a PostgreSQL store has none unless it is given (servers
        /// sharing a database must share these files).
        public var keyDirectory: String?
        /// The OTP server key file (HMAC key of OTP codes and token digests). nil:
        /// `server.key` in the key directory.
        public var serverKeyFile: String?
        /// The Ed25519 checkpoint key file. nil: `checkpoint.key` in the key directory.
        public var checkpointKeyFile: String?
        /// The origin of signed checkpoints (their first line and key name). nil:
        /// ``CheckpointSigner/defaultOrigin``, which operators should replace by their log's name.
        public var origin: String?
        /// How many partitions `replay` splits the streams into (1 to 8), run over the cores beside
        /// the tree's check. nil: two per core, at most 8.
        public var replayPartitions: Int?
        /// Whether the group-commit writer pipelines durable commits (see docs/BENCHMARKS.md):
        /// off by default; an answer still waits until its events are durable.
        public var pipelinedCommit: Bool

        /// A configuration; every setting defaults as documented on its property.
        public init(keyDirectory: String? = nil, serverKeyFile: String? = nil,
                    checkpointKeyFile: String? = nil, origin: String? = nil,
                    replayPartitions: Int? = nil, pipelinedCommit: Bool = false) {
            self.keyDirectory = keyDirectory
            self.serverKeyFile = serverKeyFile
            self.checkpointKeyFile = checkpointKeyFile
            self.origin = origin
            self.replayPartitions = replayPartitions
            self.pipelinedCommit = pipelinedCommit
        }

        /// The OTP server key file in effect (nil: none can be derived).
        public var effectiveServerKeyFile: String? {
            serverKeyFile ?? keyDirectory.map { ($0 as NSString).appendingPathComponent("server.key") }
        }

        /// The checkpoint key file in effect (nil: none can be derived).
        public var effectiveCheckpointKeyFile: String? {
            checkpointKeyFile ?? keyDirectory.map { ($0 as NSString).appendingPathComponent("checkpoint.key") }
        }

        /// The checkpoint origin in effect.
        public var effectiveOrigin: String { origin ?? CheckpointSigner.defaultOrigin }

        /// The configuration the `authledger` tool uses: the settings from the
        /// environment variables it documents — `AUTHLEDGER_KEY_DIR`,
        /// `AUTHLEDGER_SERVER_KEY_FILE`, `AUTHLEDGER_CHECKPOINT_KEY_FILE`,
        /// `AUTHLEDGER_ORIGIN`, `AUTHLEDGER_REPLAY_PARTITIONS`, `AUTHLEDGER_PIPELINED_COMMIT=1`
        /// (an empty variable is unset). Reads only the dictionary it is given.
        public static func fromEnvironment(_ environment: [String: String]) -> Configuration {
            func value(_ name: String) -> String? {
                guard let v = environment[name], !v.isEmpty else { return nil }
                return v
            }
            return Configuration(
                keyDirectory: value("AUTHLEDGER_KEY_DIR"),
                serverKeyFile: value("AUTHLEDGER_SERVER_KEY_FILE"),
                checkpointKeyFile: value("AUTHLEDGER_CHECKPOINT_KEY_FILE"),
                origin: value("AUTHLEDGER_ORIGIN"),
                replayPartitions: value("AUTHLEDGER_REPLAY_PARTITIONS").flatMap { Int($0) },
                pipelinedCommit: value("AUTHLEDGER_PIPELINED_COMMIT") == "1")
        }
    }
}
