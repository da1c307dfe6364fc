import AuthLedgerCore
import Foundation

extension Ledger {
    /// Counters of the group-commit writer of this `Ledger` instance.
    public var writerStats: WriterStats { writer.stats }

    /// Appends `request` through the writer thread with group commit (concurrent requests
    /// share one durable commit; each is all or none); returns after the durable commit.
    /// The synchronous form is ``append(_:expectedVersions:)``.
    public func append(_ request: AppendRequest) async throws -> AppendOutcome {
        try await onWriter { session in
            let (appended, duplicates) = try session.applyUnisolated(request)
            return AppendOutcome(appended: appended, duplicates: duplicates, head: session.head)
        }
    }

    /// Executes a command through the writer thread (time read inside the transaction),
    /// like its synchronous form: a refusal is thrown (`otp_invalid` after its `otp.failed` is durable).
    public func perform(_ command: Command, meta: StringMap? = nil, clock: @escaping @Sendable () -> Timestamp = Timestamp.now) async throws -> CommandResult {
        try validate(command)
        return try Ledger.throwingRefusal(try await onWriter { session in
            try self.execute(command, meta: meta, now: clock(), in: session)
        })
    }

    func onWriter<T: Sendable>(_ job: @escaping (AppendSession) throws -> T) async throws -> T {
        let value: any Sendable = try await withCheckedThrowingContinuation { (c: CheckedContinuation<any Sendable, Error>) in
            writer.submit({ session in try job(session) }, done: { result in c.resume(with: result) })
        }
        return value as! T
    }
}
