import Foundation

/// A named OS thread that runs the jobs handed to it one after another, in the order they
/// were submitted: the one way this project makes a thread. It is kept for work that needs
/// a thread of its own, and there are few: the writer (`WriterExecutor`: LMDB's write
/// transactions stay on the thread that began them, and the writer's loop must never take
/// a thread of the cooperative pool), the hashing beside it (`HashPipeline`: the writer
/// blocks on its results) and the replay's consumers (`ReplayFeed`: they wait on one
/// another), a backup's copy and verification (`LMDBBackup`: minutes of blocking I/O,
/// in a driver that links no NIO), and a `verify` given no other `BlockingWorkRunner`
/// (`DedicatedThreadRunner`: the CLI's). Everything else runs on Swift concurrency or
/// `NIOThreadPool` (the server's `GET /v1/verify`).
///
/// The thread starts with the first job and ends after `stop`, once the jobs queued
/// before it ran.
// @unchecked: `jobs`, `busy`, `stopped` and `ended` are guarded by `condition` (an
// NSCondition: the thread and `waitIdle`/`join` wait on it, which a Mutex cannot).
package final class DedicatedThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var busy = false
    private var started = false
    private var stopped = false
    private var ended = false
    private let name: String
    private let stackSize: Int?

    /// A thread named `name` (as `top -H` and a debugger show it); `stackSize` in bytes
    /// (nil: the platform's default).
    package init(name: String, stackSize: Int? = nil) {
        self.name = name
        self.stackSize = stackSize
    }

    /// Queues `job`; false (and it is not run) once stopped.
    @discardableResult
    package func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if stopped { return false }
        jobs.append(job)
        if !started {
            started = true
            let t = Thread { [self] in loop() }
            t.name = name
            if let stackSize { t.stackSize = stackSize }
            t.start()
        } else if jobs.count == 1 {
            condition.broadcast()
        }
        return true
    }

    /// Blocks until every job submitted so far ran; with `droppingQueued`, the jobs not yet
    /// started are dropped instead (the one running is waited for).
    package func waitIdle(droppingQueued: Bool = false) {
        condition.lock()
        if droppingQueued { jobs = [] }
        while !jobs.isEmpty || busy { condition.wait() }
        condition.unlock()
    }

    /// Ends the thread once the jobs queued before it ran; later jobs are refused.
    package func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until the thread ended (after `stop`).
    package func join() {
        condition.lock()
        while started && !ended { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        condition.lock()
        while true {
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                ended = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let batch = jobs
            jobs = []
            busy = true
            condition.unlock()
            for job in batch { job() }
            condition.lock()
            busy = false
            condition.broadcast()
        }
    }

    /// Runs blocking work (minutes of CPU and page faults: a full in-place verification, an
    /// LMDB copy) on a thread of its own, off the cooperative pool, and awaits its result.
    package static func run<T: Sendable>(name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let thread = DedicatedThread(name: name)
        defer { thread.stop() }
        return try await withCheckedThrowingContinuation { c in
            thread.submit { c.resume(with: Result { try body() }) }
        }
    }
}
