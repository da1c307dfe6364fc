@_exported import AuthLedger
import Foundation

extension Ledger {
    /// Opens the ledger in the LMDB store directory `path` (created 0700 when missing), the
    /// embedded default. The files beside the log (keys) live in the same directory unless
    /// `configuration` names a ``/AuthLedger/Ledger/Configuration/keyDirectory``.
    ///
    /// ```swift
    /// import AuthLedgerLMDB
    /// let ledger = try await Ledger(lmdb: "/var/lib/authledger")
    /// ```
    public convenience init(lmdb path: String, configuration: Configuration = Configuration()) async throws {
        var configuration = configuration
        if configuration.keyDirectory == nil { configuration.keyDirectory = path }
        try await self.init(storage: try LMDBStorage(path: path), configuration: configuration)
    }
}
