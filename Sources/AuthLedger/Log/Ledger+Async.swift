import AuthLedgerCore
import Foundation

extension Ledger {
    /// Counters of the group-commit writer of this `Ledger` instance.
    public var writerStats: WriterStats { writer.stats }

    /// Validates `request` against the rules and appends it atomically (all or none) through
    /// the writer thread with group commit: concurrent requests share one durable commit,
    /// and a refused request refuses only itself. Returns after the durable commit.
    /// Identical re-appends (same id, same content) are skipped and counted.
    ///
    /// ```swift
    /// let outcome = try await ledger.append(AppendRequest(inputs, expectedVersions: ["alice": 3]))
    /// ```
    public func append(_ request: AppendRequest) async throws -> AppendOutcome {
        try await onWriter(inputs: request.inputs, states: Array(request.expectedVersions.keys)) { session in
            let (appended, duplicates) = try session.applyUnisolated(request)
            return AppendOutcome(appended: appended, duplicates: duplicates, head: session.head)
        }
    }

    /// `append(_:)` of a request of `inputs`.
    public func append(_ inputs: [EventInput], expectedVersions: [String: UInt64] = [:]) async throws -> AppendOutcome {
        try await append(AppendRequest(inputs, expectedVersions: expectedVersions))
    }

    /// Decides `command` against the state read inside the write transaction, at the time
    /// `clock()` gives inside it (so racing writers never move a stream's `at` backwards),
    /// validates the events with `evolve`, and appends them durably through the writer
    /// thread with group commit. A refusal appends nothing and is thrown — except that
    /// `otp_invalid` keeps its `otp.failed` (committed, then thrown in
    /// ``/AuthLedgerCore/LedgerError/appended``).
    public func perform(_ command: Command, meta: StringMap? = nil, clock: @escaping @Sendable () -> Timestamp = Timestamp.now) async throws -> CommandResult {
        try validate(command, meta: meta)
        let draws = DecisionDraws()
        return try Ledger.throwingRefusal(try await onWriter(states: command.user.map { [$0] } ?? [],
                                                             records: recordsNamed(by: command, draws: draws)) { session in
            try self.execute(command, meta: meta, now: clock(), draws: draws, in: session)
        })
    }

    /// Runs `job` in the writer's next group; `inputs`, `states`, `records` and `meta` name what it reads, loaded
    /// with the group's (`StorageBackend.writeGroup`).
    func onWriter<T: Sendable>(inputs: [EventInput] = [], states: [String] = [],
                               records: [(kind: RecordKind, user: String, id: String)] = [], meta: [String] = [],
                               _ job: @escaping (AppendSession) throws -> T) async throws -> T {
        let value: any Sendable = try await withCheckedThrowingContinuation { (c: CheckedContinuation<any Sendable, Error>) in
            writer.submit({ session in try job(session) }, inputs: inputs, states: states, records: records, meta: meta,
                          done: { result in c.resume(with: result) })
        }
        return value as! T
    }
}
