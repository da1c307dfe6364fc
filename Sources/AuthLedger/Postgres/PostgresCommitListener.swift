import Foundation
import Logging
import NIOCore
import PostgresNIO

/// Commits of other processes on the same PostgreSQL store, as a wake-up.
///
/// Every write that moves the head also sends `NOTIFY <schema>` with the new head and the
/// writing process's instance id, in the statement that moves it (PostgreSQL delivers it
/// at COMMIT, and drops it with a rolled-back savepoint or transaction). Each ledger keeps
/// one connection listening on that channel and rings its commit observers (the event
/// feeds) for the commits of the others. It is only a doorbell: a feed reads the log by
/// `seq` and also polls, so a lost notification or a dropped listening connection delays
/// an event by at most the poll interval and never loses or reorders one.
final class PostgresCommitListener: @unchecked Sendable {
    private let connection: PostgresConnection
    private let context: PostgresListenContext

    init(storage: PostgresStorage, _ onCommit: @escaping @Sendable (Head) -> Void) throws {
        connection = try storage.connections.openDedicated()
        let own = storage.instance
        context = connection.addListener(channel: storage.location.schema) { _, notification in
            let parts = notification.payload.split(separator: " ")
            guard parts.count == 3, parts[2] != own, let seq = UInt64(parts[0]),
                  let hash = Hash32(hex: String(parts[1])) else { return }
            // Not on the event loop: an observer may read the store (a blocking wait).
            DispatchQueue.global().async { onCommit(Head(seq: seq, hash: hash)) }
        }
    }

    deinit {
        context.stop()
        PostgresConnections.close(connection)
    }
}

extension PostgresConnections {
    /// A connection outside the pool (the listener's), closed by its owner.
    func openDedicated() throws -> PostgresConnection {
        let s = try acquire()
        return s.connection
    }
}
