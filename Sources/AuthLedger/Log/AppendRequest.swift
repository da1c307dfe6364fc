import AuthLedgerCore
import Crypto

/// One append request: events to validate and append atomically, with optional
/// expected stream versions (optimistic concurrency).
public struct AppendRequest: Sendable {
    /// The events, in the order they are appended; all or none of them are.
    public var inputs: [EventInput]
    /// For each stream key named, the version the stream must be at before the request's first event
    /// of it (for a stream the request does not touch: at the end); `version_conflict` otherwise.
    public var expectedVersions: [String: UInt64]
    /// A request to append `inputs`, under the expected versions given.
    public init(_ inputs: [EventInput], expectedVersions: [String: UInt64] = [:]) {
        self.inputs = inputs
        self.expectedVersions = expectedVersions
    }

    /// A key of `expectedVersions`: a user key (SPEC 1.1) or the policy stream `$system`.
    public static func checkStreamKey(_ stream: String) throws(LedgerError) {
        if stream == systemStream { return }
        do {
            try EventDecoder.checkUser(stream)
        } catch {
            throw LedgerError.invalid("an expected version names a stream that cannot exist (a user key or $system)", field: "expectedVersion")
        }
    }
}
