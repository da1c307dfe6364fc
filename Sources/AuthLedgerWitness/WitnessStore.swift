import AuthLedgerCore
import Foundation
import LMDB

/// The witness's memory: for each origin, the size and root hash of the latest
/// checkpoint it cosigned, in an LMDB directory. Every check-and-update runs inside one
/// write transaction on the store's own thread and is committed (synced) before its
/// caller resumes; requests arriving together share one transaction (group commit), in
/// arrival order, each seeing the ones before it. So two submissions for one origin
/// cannot roll it back, and an acknowledged checkpoint survives a crash.
public final class WitnessStore: Sendable {
    /// What a witness holds for one origin.
    public struct Held: Sendable, Equatable {
        /// The tree size.
        public var size: UInt64
        /// The root hash at that size.
        public var root: Hash32

        /// The state `size`, `root`.
        public init(size: UInt64, root: Hash32) {
            self.size = size
            self.root = root
        }
    }

    private let environment: Environment
    private let database: Database
    private let queue: WitnessStoreQueue

    /// Opens (creating it if needed) the store in directory `path`.
    public init(path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        environment = try Environment(path: path, maxDatabases: 2, initialMapSize: 64 << 20)
        database = try environment.database("checkpoints")
        queue = WitnessStoreQueue(environment: environment, database: database)
    }

    /// What the store holds for `origin` (nil when it never cosigned one of it).
    public func held(_ origin: String) throws -> Held? {
        try environment.read { txn in try txn.get(database, Array(origin.utf8)).flatMap(WitnessStore.decode) }
    }

    /// Every origin with its held state.
    public func all() throws -> [String: Held] {
        try environment.read { txn in
            var out: [String: Held] = [:]
            let c = try txn.cursor(database)
            var e = try c.first()
            while let (k, v) = e {
                if let h = WitnessStore.decode(Array(v)) { out[String(decoding: k, as: UTF8.self)] = h }
                e = try c.next()
            }
            return out
        }
    }

    /// Runs `decide` with what the store holds for `origin`, inside a write transaction;
    /// when it returns a new state, that state is stored. Returns once the transaction is
    /// committed durably (or throws the store's error, nothing stored).
    public func update<T: Sendable>(
        _ origin: String, _ decide: @escaping @Sendable (Held?) -> (result: T, store: Held?)
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, Error>) in
            queue.submit(WitnessStoreQueue.Job(key: Array(origin.utf8), run: { old in
                let (r, new) = decide(old.flatMap(WitnessStore.decode))
                return (new.map(WitnessStore.encode), { c.resume(returning: r) })
            }, fail: { c.resume(throwing: $0) }))
        }
    }

    static func encode(_ h: Held) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: h.size >> (56 - 8 * $0)) } + h.root.bytes
    }

    static func decode(_ b: [UInt8]) -> Held? {
        guard b.count == 40 else { return nil }
        return Held(size: b.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }, root: Hash32(bytes: Array(b[8...])))
    }
}
