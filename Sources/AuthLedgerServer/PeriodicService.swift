import AuthLedger
import Logging
import ServiceLifecycle

/// Work the server does every `interval` until it shuts down (clearing stale LMDB readers,
/// updating the user index). A failure is logged with `failure` and tried again at the
/// next interval: a storage error never takes the HTTP service down.
struct PeriodicService: Service {
    let interval: Duration
    let logger: Logger
    let failure: String
    let work: @Sendable () async throws -> Void

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            do {
                try await work()
            } catch is CancellationError {
                return
            } catch {
                logger.error("\(failure)", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Now and then clears the LMDB reader slots of processes that died inside a read
    /// transaction (an `authledger export | head` killed by SIGPIPE, a crashed tool): a
    /// stale slot pins the pages of its old snapshot, and the file would only grow while
    /// the server runs.
    static func readerCheck(_ ledger: Ledger, every interval: Duration, logger: Logger) -> PeriodicService {
        PeriodicService(interval: interval, logger: logger, failure: "reader check failed") {
            let cleared = try ledger.clearStaleReaders()
            if cleared > 0 { logger.notice("cleared stale LMDB readers", metadata: ["count": "\(cleared)"]) }
        }
    }

    /// Appends the index log's entry (the user index brought up to the head) at most every
    /// `interval`, when the log has grown since the last (reference section 14).
    static func userIndexUpdater(_ ledger: Ledger, every interval: Duration, logger: Logger) -> PeriodicService {
        PeriodicService(interval: interval, logger: logger, failure: "the user index update failed") {
            if try await ledger.userIndexLags() { try await ledger.updateUserIndex() }
        }
    }
}
