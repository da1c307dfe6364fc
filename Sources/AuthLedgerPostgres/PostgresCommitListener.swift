import AuthLedgerCore
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
///
/// When the listening connection drops (the server restarted, a proxy or an administrator
/// cut it), the listener opens a new one (retrying every `retryInterval`) and then rings
/// the observers once with the current head, for the commits it could not hear meanwhile.
/// The retries are scheduled on a dispatch queue; no thread sleeps while the database is down.
// @unchecked: the connection and its LISTEN context are guarded by `lock`; PostgresNIO's listen context is not Sendable.
final class PostgresCommitListener: @unchecked Sendable {
    private weak var storage: PostgresStorage?
    private let onCommit: @Sendable (Head) -> Void
    private let channel: String
    private let own: String
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private var context: PostgresListenContext?
    private var stopped = false
    static let retryInterval: TimeInterval = 1

    init(storage: PostgresStorage, _ onCommit: @escaping @Sendable (Head) -> Void) throws {
        self.storage = storage
        self.onCommit = onCommit
        channel = storage.location.schema
        own = storage.instance
        try listen(storage)
    }

    private func listen(_ storage: PostgresStorage) throws {
        let connection = try storage.connections.openDedicated()
        let own = self.own, onCommit = self.onCommit
        let context = connection.addListener(channel: channel) { _, notification in
            let parts = notification.payload.split(separator: " ")
            guard parts.count == 3, parts[2] != own, let seq = UInt64(parts[0]),
                  let hash = Hash32(hex: String(parts[1])) else { return }
            // Not on the event loop: an observer may read the store (a blocking wait).
            DispatchQueue.global().async { onCommit(Head(seq: seq, hash: hash)) }
        }
        let keep = lock.withLock { () -> Bool in
            guard !stopped else { return false }
            self.connection = connection
            self.context = context
            return true
        }
        guard keep else {
            context.stop()
            PostgresConnections.close(connection)
            return
        }
        connection.closeFuture.whenComplete { [weak self] _ in self?.dropped() }
    }

    /// The listening connection closed: listen again unless this listener is being stopped.
    private func dropped() {
        let again = lock.withLock { () -> Bool in
            context = nil
            connection = nil
            return !stopped
        }
        guard again else { return }
        Logger(label: "authledger.postgres").warning("the connection listening for other servers' commits dropped; reconnecting (feeds poll meanwhile)")
        DispatchQueue.global().async { [weak self] in self?.reconnect() }
    }

    /// One try to listen again; on failure the next try is scheduled `retryInterval` later
    /// (no thread waits meanwhile).
    private func reconnect() {
        guard let storage, !lock.withLock({ stopped }) else { return }
        do {
            try listen(storage)
            // Commits made while nobody listened: one wake-up with the head as it is now.
            if let head = try? storage.read({ try $0.head() }) { onCommit(head) }
        } catch {
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.retryInterval) { [weak self] in self?.reconnect() }
        }
    }

    deinit { stop() }

    /// Stops listening and closes the listening connection; no reconnection follows.
    func stop() {
        let (connection, context) = lock.withLock { () -> (PostgresConnection?, PostgresListenContext?) in
            stopped = true
            defer { self.connection = nil; self.context = nil }
            return (self.connection, self.context)
        }
        context?.stop()
        if let connection { PostgresConnections.close(connection) }
    }
}

extension PostgresConnections {
    /// A connection outside the pool (the listener's), closed by its owner.
    func openDedicated() throws -> PostgresConnection {
        let s = try acquire()
        return s.connection
    }
}
