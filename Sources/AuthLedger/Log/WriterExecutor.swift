import Foundation

/// The writer's thread as a task executor: the writer's loop is a task that runs on this
/// one thread (`Writer`), so its work never takes a thread of the cooperative pool, the
/// synchronous backends' transactions (LMDB's, bound to their thread) stay on one thread,
/// and a write that awaits PostgresNIO (`StorageBackend.writeAsync`) leaves the thread
/// idle instead of blocking it on a future: the answer resumes the task here.
final class WriterExecutor: TaskExecutor {
    /// The thread (`DedicatedThread`): LMDB needs its write transactions on one thread.
    private let thread: DedicatedThread

    /// The thread starts with the first job.
    init(name: String) {
        thread = DedicatedThread(name: name)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        thread.submit { job.runSynchronously(on: executor) }
    }

    /// Ends the thread once the jobs queued are run.
    func stop() {
        thread.stop()
    }
}
