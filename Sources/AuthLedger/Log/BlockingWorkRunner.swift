/// Where the ledger runs work that holds its thread for long: a full in-place
/// verification of an LMDB store (``Ledger/verify(on:)``: minutes of CPU and page faults
/// on a large log). Such work must not take a thread of the cooperative pool, which the
/// ledger's reads and writes await on.
///
/// The library runs it on a thread of its own by default (``DedicatedThreadRunner``); a
/// service with a pool of threads for blocking work passes a runner backed by it (the
/// HTTP server passes one over NIO's `NIOThreadPool`), so a request starts no thread.
public protocol BlockingWorkRunner: Sendable {
    /// Runs `body` on a thread that may block (not one of the cooperative pool), awaits it,
    /// and returns its result or throws its error.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T
}

/// Runs each piece of blocking work on a new thread of its own, named ``name``, that ends
/// with it: the default of ``Ledger/verify(on:)``, for a caller without a pool of threads
/// for blocking work (the `authledger` CLI, a backup's verification).
public struct DedicatedThreadRunner: BlockingWorkRunner {
    /// The name of the threads (as `top -H` and a debugger show them).
    public let name: String

    /// A runner whose threads are named `name`.
    public init(name: String) {
        self.name = name
    }

    /// Runs `body` on a new thread named ``name`` and returns its result or throws its error.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await DedicatedThread.run(name: name, body)
    }
}
