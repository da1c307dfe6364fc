import ArgumentParser
import AuthLedger

/// A key file some commands need beside the log: on an LMDB store it is in the store
/// directory (created on first use); a PostgreSQL store has no directory, so it must be
/// configured (`AUTHLEDGER_KEY_DIR`, or its own variable).
enum KeyFile {
    /// The OTP server key (`server.key`: the HMAC key of OTP codes and link tokens): send-otp,
    /// verify-otp, request-verification, redeem-link, serve.
    case server
    /// The checkpoint signing key (`checkpoint.key`): checkpoint, prove, prove-consistency, serve.
    case checkpoint

    var name: String {
        switch self {
        case .server: "the OTP server key (server.key, or AUTHLEDGER_SERVER_KEY_FILE)"
        case .checkpoint: "the checkpoint key (checkpoint.key, or AUTHLEDGER_CHECKPOINT_KEY_FILE)"
        }
    }

    func isConfigured(in c: Ledger.Configuration) -> Bool {
        switch self {
        case .server: c.effectiveServerKeyFile != nil
        case .checkpoint: c.effectiveCheckpointKeyFile != nil
        }
    }
}

extension GlobalOptions {
    /// Refuses `command` at once, as a usage error (exit 2), when one of `keys` cannot be
    /// found: a configuration error, told before the store is even opened rather than as
    /// a storage failure at the first code or checkpoint.
    func requireKeyFiles(_ keys: [KeyFile], for command: String) throws {
        let missing = keys.filter { !$0.isConfigured(in: configuration) }
        guard !missing.isEmpty else { return }
        throw ValidationError("""
            \(command) needs \(missing.map(\.name).joined(separator: " and ")), and a PostgreSQL store keeps \
            its key files in AUTHLEDGER_KEY_DIR: set it, the same on every server of the database \
            (docs/POSTGRESQL.md, section "Key files")
            """)
    }
}
