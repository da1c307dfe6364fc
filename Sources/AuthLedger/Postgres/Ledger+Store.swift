import AuthLedgerCore
import Foundation

extension Ledger {
    /// Opens the store `store` names (SPEC 8): a `postgresql://` URL (PostgreSQL, see
    /// `PostgresStorage`) or an LMDB store directory.
    ///
    /// A PostgreSQL store has no directory of its own for the files kept beside an LMDB
    /// log (the OTP server key, the checkpoint key, the Shared Signals keys): they are in
    /// `AUTHLEDGER_KEY_DIR` when it is set, else each comes from its own variable
    /// (`AUTHLEDGER_SERVER_KEY_FILE`, `AUTHLEDGER_CHECKPOINT_KEY_FILE`…). Servers that share
    /// one database must share these keys.
    public convenience init(store: String) throws {
        if PostgresLocation.isPostgres(store) {
            try self.init(storage: PostgresStorage(url: store), path: Ledger.keyDirectory(store: store))
        } else {
            try self.init(path: store)
        }
    }

    /// The directory of the files beside the log: the store directory, or for a
    /// PostgreSQL store `AUTHLEDGER_KEY_DIR` (nil when unset).
    public static func keyDirectory(store: String) -> String? {
        guard PostgresLocation.isPostgres(store) else { return store }
        guard let dir = ProcessInfo.processInfo.environment["AUTHLEDGER_KEY_DIR"], !dir.isEmpty else { return nil }
        return dir
    }
}
