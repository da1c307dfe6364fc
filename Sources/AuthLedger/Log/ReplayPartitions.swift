import Synchronization
import AuthLedgerCore
import Foundation
import Logging

/// The partitions' results, each set by its partition and taken by the replay.
final class ReplayPartitions: Sendable {
    private let slots: Mutex<[Result<Ledger.ReplayPartition, Error>?]>
    init(_ n: Int) { slots = Mutex(Array(repeating: nil, count: n)) }
    var results: [Result<Ledger.ReplayPartition, Error>?] { slots.withLock { $0 } }
    func set(_ k: Int, _ r: Result<Ledger.ReplayPartition, Error>) { slots.withLock { $0[k] = r } }
    /// The result of partition `k`, no longer held here.
    func take(_ k: Int) -> Result<Ledger.ReplayPartition, Error> {
        slots.withLock { s in
            defer { s[k] = nil }
            return s[k] ?? .failure(LedgerError(.storageError, "the replay's results were already written"))
        }
    }
}
