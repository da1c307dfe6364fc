import AuthLedgerLMDB
import AuthLedgerPostgres
import Foundation

extension Ledger {
    /// Opens `store` with the driver its name calls for — a `postgresql://` URL or an LMDB
    /// directory — as the `authledger` tool does (the suites run on both).
    public convenience init(store: String, configuration: Configuration = Configuration()) async throws {
        if PostgresLocation.isPostgres(store) {
            try await self.init(postgres: store, configuration: configuration)
        } else {
            try await self.init(lmdb: store, configuration: configuration)
        }
    }
}
