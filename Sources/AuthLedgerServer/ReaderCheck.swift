import AuthLedger
import Logging
import ServiceLifecycle

/// Now and then clears the LMDB reader slots of processes that died inside a read
/// transaction (an `authledger export | head` killed by SIGPIPE, a crashed tool): a
/// stale slot pins the pages of its old snapshot, and the file would only grow while
/// the server runs.
struct ReaderCheck: Service {
    let ledger: Ledger
    let interval: Duration
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            do {
                let cleared = try ledger.clearStaleReaders()
                if cleared > 0 { logger.notice("cleared stale LMDB readers", metadata: ["count": "\(cleared)"]) }
            } catch {
                logger.error("reader check failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
