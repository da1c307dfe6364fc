import AuthLedgerCore
import NIOCore
import PostgresNIO

/// Reads and writes of one PostgreSQL write transaction (`PostgresStorage.writeGroup`,
/// `writeAwaiting`). Keys are stored as bytes (UTF-8 for stream keys, users, ids and meta
/// keys; 16 bytes for event ids), so no collation or encoding can reorder or refuse them.
///
/// It reads everything before its body runs (`load`); the body then never waits for
/// PostgreSQL. Writes are kept in layers (`PostgresPendingWrites`): a request of a commit
/// group (`savepoint`) has its own, which joins the group's when it passes and is dropped
/// when it is refused — no SAVEPOINT, no RELEASE and no wait per request; one that must send
/// its writes before it ends (it clears, or it writes more than `sendEarly` rows) opens a
/// real savepoint first. Statements are sent as they go and their answers collected with
/// COMMIT's (`drainAsync`). If PostgreSQL refuses one — a reason the ledger's own checks
/// could not see — the group's writes went together, so the failure is no one request's:
/// it says `refusedInGroup`, and the writer runs the group's requests again one per
/// transaction (`GroupStatementRefused`).
final class PostgresAccess: StorageWriter {
    let s: PostgresSession
    let t: PostgresTables
    var savepoints = 0
    /// Rows a layer holds before it is sent (when it may be): PostgreSQL then inserts
    /// while the writer encodes the next events.
    static let sendEarly = 4096

    let instance: String

    /// The transaction's writes not yet sent: outside requests and of the requests that passed.
    var pending = PostgresPendingWrites()
    /// The current request's writes (inside `savepoint`), nil outside a request.
    var requestPending: PostgresPendingWrites?
    /// Whether the current request's SAVEPOINT was sent (its writes may then be sent).
    var savepointOpen = false

    /// The head as this transaction last wrote or read it (the writes' transactions read
    /// it when they lock it, and nobody else can move it while they hold the lock).
    var knownHead: Head?

    /// The head locked when the transaction began (nil: a read transaction).
    let startHead: Head?
    /// What the load step read (see `PostgresAccess+Load.swift`).
    var cache: PostgresLoaded
    /// The last tree hash written at each level (the next frontier: `PostgresStorage.frontier`).
    var lastAtLevel: [Int: (index: UInt64, hash: [UInt8])] = [:]
    /// Whether the tree was cleared (a rebuild): the process's frontier is not kept then.
    var treeCleared = false
    /// The streams appended to since a head this process committed (another server's
    /// appends; `PostgresStorage+CatchUp.swift`).
    var changedSince: (head: Head, streams: Set<String>)?
    /// The new contents of the tables a replay cleared, sent at the end (`PostgresReplacement`).
    var replacing = PostgresReplacement()
    /// The store's count of a group's round trips (`PostgresStorage.groupRoundTrips`).
    let roundTrips: PostgresCounter?
    /// The read cache when the current request's savepoint was opened (a rollback to it restores it).
    var cacheAtSavepoint: PostgresLoaded?

    init(session: PostgresSession, tables: PostgresTables, instance: String, head: Head? = nil,
         unloadedReads: PostgresCounter? = nil, roundTrips: PostgresCounter? = nil) {
        self.roundTrips = roundTrips
        self.s = session
        self.t = tables
        self.instance = instance
        knownHead = head
        startHead = head
        cache = PostgresLoaded(misses: unloadedReads)
    }

    /// Records a write in the current layer; a layer that may be sent is sent when large.
    func write(_ change: (inout PostgresPendingWrites) -> Void) throws {
        if requestPending != nil {
            change(&requestPending!)
            if requestPending!.rowCount >= Self.sendEarly {
                // A large request (an import, a bulk append) streams its rows while it goes
                // on: behind a real savepoint, so that a refusal still undoes only its own.
                if !savepointOpen { try openSavepoint() }
                try sendPending(&requestPending!)
            }
        } else {
            change(&pending)
            if pending.rowCount >= Self.sendEarly { try sendPending(&pending) }
        }
    }

    /// Sends a layer's statements (without waiting for the answers) and empties it.
    func sendPending(_ layer: inout PostgresPendingWrites) throws {
        guard !layer.isEmpty else { return }
        let statements = layer.statements(t, instance: instance)
        cache.remember(layer)
        layer = PostgresPendingWrites()
        for statement in statements { try sendNow(statement) }
    }

    /// Sends one statement; its answer is collected at the end (`drainAsync`).
    func sendNow(_ statement: PostgresStatement) throws {
        inFlight.append(s.send(statement))
    }

    /// Sends every write so far, opening the current request's savepoint first if it has
    /// none (before a scan, an erasure: what the layers cannot answer or order).
    func sendAll() throws {
        try sendWrites()
        try sendReplacement()
    }

    /// `sendAll` but for a replacement (`PostgresReplacement`), which stays for the end:
    /// before a clear, whose table's new contents follow (a replay clears the projections,
    /// then the records: the projections' replacement is not sent empty in between).
    func sendWrites() throws {
        // (With nothing to send, no savepoint either.)
        if pending.isEmpty && (requestPending?.isEmpty ?? true) { return }
        if requestPending != nil && !savepointOpen { try openSavepoint() }
        try sendPending(&pending)
        if requestPending != nil { try sendPending(&requestPending!) }
    }

    var savepointName: String { "authledger_\(savepoints)" }

    /// Sends the current request's SAVEPOINT, after the group's writes (a rollback to it then
    /// forgets only the request's). Every answer is collected at the end: a refusal then
    /// fails the group, whose requests run again one per transaction.
    func openSavepoint() throws {
        try sendPending(&pending)
        cacheAtSavepoint = cache.copy()
        try sendNow(PostgresStatement("SAVEPOINT \(savepointName)", doing: "savepoint"))
        savepointOpen = true
    }

    // MARK: Binding helpers

    static func int(_ v: UInt64) -> Int64 { Int64(bitPattern: v) }
    static func bytes(_ a: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: a) }
    static func text(_ s: String) -> ByteBuffer { ByteBuffer(string: s) }

    // MARK: Pipelined writes

    /// Statements sent and not yet answered. They do not wait for their answer: the
    /// writer thread goes on encoding the next events while PostgreSQL runs them, and the
    /// answers are collected with COMMIT (`drainAsync`).
    var inFlight: [PostgresSent] = []

    /// Awaits the answers of every statement sent; throws the first failure. A refused statement
    /// cannot be pinned on one request (their writes went together): the whole group goes (`refusedInGroup`).
    func drainAsync() async throws {
        let sent = inFlight
        inFlight = []
        do { _ = try await s.answers(sent) } catch let e as PostgresFailure { throw e.inGroup }
    }

    /// What the layers hold for a point read: the request's own writes, then the group's.
    func layered<V>(_ look: (PostgresPendingWrites) -> V?) -> V? {
        if let r = requestPending, let v = look(r) { return v }
        return look(pending)
    }
}
