@_exported import AuthLedger

extension Ledger {
    /// Opens the ledger in the PostgreSQL database `url` names
    /// (`postgresql://USER:PASSWORD@HOST[:PORT]/DB[?schema=S&sslmode=M]`), creating or
    /// migrating its tables. Several processes may open one database; each listens for the
    /// others' commits so its live feeds see them.
    ///
    /// A PostgreSQL store has no directory of its own for the files kept beside an LMDB
    /// log (the OTP server key, the checkpoint key, the Shared Signals keys): give one with
    /// ``/AuthLedger/Ledger/Configuration/keyDirectory`` (the `authledger` tool: `AUTHLEDGER_KEY_DIR`).
    /// Servers that share one database must share these keys.
    ///
    /// ```swift
    /// import AuthLedgerPostgres
    /// let ledger = try await Ledger(postgres: url, configuration: .init(keyDirectory: "/etc/authledger"))
    /// ```
    public convenience init(postgres url: String, configuration: Configuration = Configuration()) async throws {
        try await self.init(storage: try await PostgresStorage(url: url), configuration: configuration)
    }
}
