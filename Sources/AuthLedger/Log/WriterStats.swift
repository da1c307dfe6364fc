import AuthLedgerCore
import Foundation

/// What the writer thread did: for the benchmark and for operators.
public struct WriterStats: Sendable {
    /// Write transactions committed by the writer thread.
    public var transactions: Int
    /// Requests those transactions carried (group commit: several per transaction).
    public var requests: Int
    /// Seconds inside write transactions, and of those, in the durable commit.
    public var busySeconds: Double
    /// Of `busySeconds`, the time spent in the durable commit itself.
    public var commitSeconds: Double
    /// Explicit syncs of a pipelined commit because no next commit came to sync it.
    public var idleSyncs: Int = 0
}
