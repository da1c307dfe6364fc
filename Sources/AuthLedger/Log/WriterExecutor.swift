import Foundation

/// The writer's thread as a task executor: the writer's loop is a task that runs on this
/// one thread (`Writer`), so its work never takes a thread of the cooperative pool, the
/// synchronous backends' transactions (LMDB's, bound to their thread) stay on one thread,
/// and a write that awaits PostgresNIO (`StorageBackend.writeAsync`) leaves the thread
/// idle instead of blocking it on a future: the answer resumes the task here.
// @unchecked: `jobs` and `stopped` are guarded by `condition`.
final class WriterExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    /// Starts the thread.
    init(name: String) {
        let t = Thread { [self] in run() }
        t.name = name
        t.qualityOfService = .userInitiated
        t.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Ends the thread once the jobs queued are run.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
