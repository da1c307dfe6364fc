import AuthLedgerCore
import Logging
import PostgresNIO

/// Commits of other processes on the same PostgreSQL store, as a wake-up.
///
/// Every write that moves the head also sends `NOTIFY <schema>` with the new head and the
/// writing process's instance id, in the statement that moves it (PostgreSQL delivers it
/// at COMMIT, and drops it with a rolled-back savepoint or transaction). Each ledger keeps
/// one connection of its own listening on that channel (PostgresNIO's `listen(on:consume:)`)
/// and rings its commit observers (the event feeds) for the commits of the others. It is
/// only a doorbell: a feed reads the log by `seq` and also polls, so a lost notification
/// or a dropped listening connection delays an event by at most the poll interval and
/// never loses or reorders one.
///
/// When the listening connection drops (the server restarted, a proxy or an administrator
/// cut it), the listener's task listens again on a new connection (retrying every
/// `retryInterval`, asleep meanwhile) and then rings the observers once with the current
/// head, for the commits it could not hear meanwhile.
final class PostgresCommitListener: Sendable {
    private let task: Task<Void, Never>
    static let retryInterval: Duration = .seconds(1)

    init(storage: PostgresStorage, _ onCommit: @escaping @Sendable (Head) -> Void) {
        let channel = storage.location.schema
        let own = storage.instance
        task = Task { [weak storage] in
            var heard = false, warned = false
            while !Task.isCancelled, let connections = storage?.connections {
                do {
                    try await connections.withDedicated { connection in
                        try await connection.listen(on: channel) { notifications in
                            // Commits made while nobody listened: one wake-up with the head as it is now.
                            if heard, let head = try? await storage?.readAsync({ ReadLoad() }, { try $0.head() }) { onCommit(head) }
                            (heard, warned) = (true, false)
                            for try await notification in notifications {
                                let parts = notification.payload.split(separator: " ")
                                guard parts.count == 3, parts[2] != own, let seq = UInt64(parts[0]),
                                      let hash = Hash32(hex: String(parts[1])) else { continue }
                                onCommit(Head(seq: seq, hash: hash))
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    if !warned { Logger(label: "authledger.postgres").warning(
                        heard ? "the connection listening for other servers' commits dropped; reconnecting (feeds poll meanwhile)"
                              : "not listening for other servers' commits yet (feeds poll)",
                        metadata: ["error": "\((error as? LedgerError)?.message ?? "\(type(of: error))")"]) }
                    warned = true
                }
                if Task.isCancelled { return }
                heard = true
                try? await Task.sleep(for: Self.retryInterval)
            }
        }
    }

    deinit { stop() }

    /// Stops listening (the listening connection goes back to the pool); no reconnection follows.
    func stop() { task.cancel() }
}
