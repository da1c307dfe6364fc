import Foundation
import LMDB
import NIOPosix
import Synchronization

/// The witness store's writer: takes every waiting job, runs them in order in one LMDB
/// write transaction (each seeing the values the earlier ones wrote), commits it, and only
/// then lets the jobs answer. The transactions run on `NIOThreadPool` (blocking work: a
/// commit syncs to disk), one drain at a time; each transaction begins and commits on the
/// one thread that runs it, and none waits on the cooperative pool.
final class WitnessStoreQueue: Sendable {
    struct Job: Sendable {
        let key: [UInt8]
        /// Given the stored value, returns the value to store (or nil) and what to run after the commit.
        let run: @Sendable ([UInt8]?) -> (store: [UInt8]?, after: @Sendable () -> Void)
        let fail: @Sendable (Error) -> Void
    }

    private let environment: Environment
    private let database: Database
    /// The jobs waiting, and whether a drain is queued or running (it takes them all).
    private let state = Mutex<(jobs: [Job], draining: Bool)>(([], false))

    init(environment: Environment, database: Database) {
        self.environment = environment
        self.database = database
    }

    func submit(_ job: Job) {
        let start = state.withLock { s in
            s.jobs.append(job)
            defer { s.draining = true }
            return !s.draining
        }
        if start { NIOThreadPool.singleton.submit { [self] _ in drain() } }
    }

    /// Commits the waiting jobs, a transaction at a time, until none waits.
    private func drain() {
        while true {
            let batch = state.withLock { s -> [Job] in
                if s.jobs.isEmpty { s.draining = false }
                defer { s.jobs = [] }
                return s.jobs
            }
            if batch.isEmpty { return }
            do {
                let after = try environment.write { txn -> [@Sendable () -> Void] in
                    var pending: [[UInt8]: [UInt8]] = [:]
                    return try batch.map { job in
                        let current = try pending[job.key] ?? txn.get(database, job.key)
                        let (value, after) = job.run(current)
                        if let value {
                            try txn.put(database, job.key, value)
                            pending[job.key] = value
                        }
                        return after
                    }
                }
                after.forEach { $0() }
            } catch {
                batch.forEach { $0.fail(error) }
            }
        }
    }
}
