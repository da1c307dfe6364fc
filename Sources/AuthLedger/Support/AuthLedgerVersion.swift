/// The release of this build: `authledger --version`, `authledger_build_info{version}` on
/// `/metrics`, and the `version` of a backup's manifest. The one place it is written.
public enum AuthLedgerVersion {
    /// The version string (semantic versioning).
    public static let current = "0.9.0"
}
