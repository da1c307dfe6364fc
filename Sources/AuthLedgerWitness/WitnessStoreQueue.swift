import Foundation
import LMDB
import Synchronization

/// The witness store's writer: one thread that takes every waiting job, runs them in
/// order in one LMDB write transaction (each seeing the values the earlier ones wrote),
/// commits it, and only then lets the jobs answer. LMDB's write transactions stay on
/// the thread that began them; no transaction waits on the cooperative pool.
final class WitnessStoreQueue: Sendable {
    struct Job: @unchecked Sendable {
        let key: [UInt8]
        /// Given the stored value, returns the value to store (or nil) and what to run after the commit.
        let run: ([UInt8]?) -> (store: [UInt8]?, after: () -> Void)
        let fail: (Error) -> Void
    }

    private let jobs = Mutex<[Job]>([])
    private let wake = DispatchSemaphore(value: 0)

    init(environment: Environment, database: Database) {
        // The thread lives as long as the process (a witness's store is opened once).
        let thread = Thread { [self] in
            while true {
                wake.wait()
                let batch = jobs.withLock { j -> [Job] in defer { j.removeAll() }; return j }
                if batch.isEmpty { continue }
                do {
                    let after = try environment.write { txn -> [() -> Void] in
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
        thread.name = "witness-store"
        thread.start()
    }

    func submit(_ job: Job) {
        jobs.withLock { $0.append(job) }
        wake.signal()
    }
}
