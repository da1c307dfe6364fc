import AuthLedgerCore
import Crypto

/// The result of one append request.
public struct AppendOutcome: Sendable {
    /// The events this request appended, in order.
    public var appended: [RecordedEvent]
    /// Events skipped because an identical event with the same id is already in the log.
    public var duplicates: Int
    /// The head after the transaction that carried this request.
    public var head: Head
}
