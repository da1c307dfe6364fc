import AuthLedgerCore
import Foundation

/// The writer's exclusive entry points: work handed to the writer, run alone after the work
/// queued before it, while the calling task is suspended.
extension Writer {
    /// Runs `work` (which opens its own write transactions) alone on the writer thread,
    /// after the work queued before it, while the calling task is suspended (no thread of
    /// the cooperative pool waits for it).
    func exclusive<T: Sendable>(_ work: @escaping () throws -> T) async throws -> T {
        try await exclusiveAsync { try work() }
    }

    /// `exclusive` of work that awaits (a replay's scan on PostgreSQL): it runs alone on the
    /// writer's task while the calling task is suspended.
    func exclusiveAsync<T: Sendable>(_ work: @escaping () async throws -> T) async throws -> T {
        let value: any Sendable = try await withCheckedThrowingContinuation { (c: CheckedContinuation<any Sendable, Error>) in
            let outcome = ExclusiveOutcome<T>()
            enqueue(Pending(work: .alone({
                do { outcome.result = .success(try await work()) } catch { outcome.result = .failure(error) }
            }), done: { r in
                // A closed ledger refuses without running it.
                if let result = outcome.result { c.resume(with: result.map { $0 as any Sendable }) } else { c.resume(with: r) }
            }))
        }
        guard let typed = value as? T else { throw LedgerError(.storageError, "the writer answered with another type") }
        return typed
    }
}

/// The result of exclusive work, handed from the writer's task to its `done`.
// @unchecked: `result` is written once by the work, and read by `done`, which the writer
// calls after the work ended.
final class ExclusiveOutcome<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}
