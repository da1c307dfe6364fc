import AuthLedgerCore
import Foundation

/// The writer's synchronous and exclusive entry points: work handed to the writer thread
/// while the caller waits (a thread, or a suspended task), and run inline when the caller
/// is the writer thread itself.
extension Writer {
    /// Runs `work` (which opens its own write transactions) on the writer thread, alone,
    /// after the work queued before it, and waits for it; on the writer thread itself,
    /// runs it at once (waiting would wait forever).
    func exclusive<T>(_ work: @escaping () throws -> T) throws -> T {
        if isCurrentThread { return try work() }
        let outcome = ExclusiveOutcome<T>()
        enqueue(Pending(work: .alone({ outcome.result = Result { try work() } }), done: { r in
            // A closed ledger refuses without running it.
            if outcome.result == nil, case let .failure(e) = r { outcome.result = .failure(e) }
            outcome.done.signal()
        }))
        outcome.done.wait()
        return try outcome.result!.get()
    }

    /// `exclusive` for async callers: the work runs alone on the writer thread while the
    /// calling task is suspended (no thread of the cooperative pool waits for it).
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

/// The result of exclusive work, handed from the writer thread to the waiting caller.
// @unchecked: `result` is written once on the writer thread before `done` is signalled,
// and read by the caller only after waiting on it.
final class ExclusiveOutcome<T>: @unchecked Sendable {
    var result: Result<T, Error>?
    let done = DispatchSemaphore(value: 0)
}
