import AuthLedgerCore
import Foundation

extension Ledger {
    /// Opens the store `store` names (SPEC 8): a `postgresql://` URL (PostgreSQL, see
    /// `PostgresStorage`) or an LMDB store directory, with the default settings
    /// (``Configuration/init(store:keyDirectory:serverKeyFile:checkpointKeyFile:origin:replayPartitions:pipelinedCommit:)``).
    ///
    /// A PostgreSQL store has no directory of its own for the files kept beside an LMDB
    /// log (the OTP server key, the checkpoint key, the Shared Signals keys): give one with
    /// ``Configuration/keyDirectory`` (the `authledger` tool: `AUTHLEDGER_KEY_DIR`). Servers
    /// that share one database must share these keys.
    public convenience init(store: String) throws {
        try self.init(Configuration(store: store))
    }
}
