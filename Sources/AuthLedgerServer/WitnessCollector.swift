import AsyncHTTPClient
import AuthLedger
import AuthLedgerWitness
import CoreMetrics
import Foundation
import Logging
import Metrics
import NIOCore
import ServiceLifecycle
import Synchronization

/// Collects witness cosignatures of the log's checkpoints and of the index log's (user
/// proofs, origin `<origin>/users`) (`serve --witness-policy`).
///
/// Every `interval`, the server holding the lease (one per shared store: a meta record
/// with an expiry, renewed each round) signs a checkpoint of the head when the head has
/// grown, and each witness — in a task of its own, so that a slow one delays no other —
/// gets it with the consistency proof from the size it holds (a 409 tells that size; it
/// is kept in the store). Valid cosignatures are added to the stored checkpoint; once
/// they meet the quorum it becomes the one `GET /checkpoint` (`GET /users/checkpoint` for
/// the index log) serves. Each log has its own records and its own loop per witness. A
/// failing witness is retried with doubling waits up to `maxBackoff`; one claiming a size
/// larger than the log is refused for good (until restart) and logged. Appends never wait on any of
/// this: the collector only reads snapshots and writes a few meta records.
///
/// A reload (SIGHUP) replaces the policy: the rounds and the witnesses' loops start again
/// with the new witnesses (what each witness holds is in the store, not lost).
final class WitnessCollector: Service, Sendable {
    let ledger: Ledger
    let signer: @Sendable () throws -> CheckpointSigner
    /// The log, then the index log (its entry is appended before the log's checkpoint is signed).
    let logs: [WitnessedLog]
    let logger: Logger
    let instance = UUID().uuidString
    private let leader = Atomic<Bool>(false)
    private let metricsFactory: any MetricsFactory

    /// The policy in force, its witnesses' loops and lag gauges, and how many times it was replaced.
    private struct Policy: Sendable {
        var configuration: WitnessingConfiguration
        /// Per log (in `logs`' order), one peer per witness.
        var peers: [[WitnessPeer]]
        /// Per log (in `logs`' order), one lag gauge per witness.
        var behind: [[Meter]]
        var generation: Int
    }
    private let current: Mutex<Policy>

    var configuration: WitnessingConfiguration { current.withLock { $0.configuration } }
    /// The log's peers, one per witness.
    var peers: [WitnessPeer] { current.withLock { $0.peers[0] } }

    init(ledger: Ledger, configuration: WitnessingConfiguration, signer: @escaping @Sendable () throws -> CheckpointSigner,
         metricsFactory: any MetricsFactory, logger: Logger) {
        self.ledger = ledger
        self.signer = signer
        let logs: [WitnessedLog] = [.log(signer), .users(signer)]
        self.logs = logs
        self.logger = logger
        self.metricsFactory = metricsFactory
        current = Mutex(Self.policy(configuration, logs, metricsFactory, generation: 0))
    }

    private static func policy(_ configuration: WitnessingConfiguration, _ logs: [WitnessedLog], _ factory: any MetricsFactory,
                               generation: Int) -> Policy {
        Policy(configuration: configuration,
               peers: logs.map { log in configuration.policy.witnesses.map { WitnessPeer(witness: $0, log: log) } },
               behind: ["authledger_witness_behind", "authledger_witness_users_behind"].map { label in
                   configuration.policy.witnesses.map { Meter(label: label, dimensions: [("witness", $0.label)], factory: factory) }
               }, generation: generation)
    }

    /// Replaces the policy (SIGHUP); the loops start again with its witnesses.
    func replace(_ configuration: WitnessingConfiguration) {
        current.withLock { $0 = Self.policy(configuration, logs, metricsFactory, generation: $0.generation + 1) }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                let policy = current.withLock { $0 }
                var config = HTTPClient.Configuration()
                config.redirectConfiguration = .disallow
                config.timeout = .init(connect: .seconds(5), read: .init(policy.configuration.requestTimeout))
                let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await self.lead() }
                    for peer in policy.peers.joined() { group.addTask { await self.serve(peer, client: client) } }
                    // Returns when the policy is replaced (or on shutdown): the others are then cancelled.
                    group.addTask {
                        while !Task.isCancelled, self.current.withLock({ $0.generation }) == policy.generation {
                            try? await Task.sleep(for: .milliseconds(200))
                        }
                    }
                    _ = await group.next()
                    group.cancelAll()
                }
                try? await client.shutdown()
            }
        }
    }

    /// Each round: the lease, a new checkpoint of each log whose head grew, the lag gauges.
    private func lead() async {
        while !Task.isCancelled {
            do {
                let ttl = Int64(configuration.interval.components.seconds) * 3000 + 10_000
                let mine = try await WitnessRecords.acquireLease(ledger, instance: instance,
                                                                 nowMs: Int64(Date().timeIntervalSince1970 * 1000), ttlMs: ttl)
                leader.store(mine, ordering: .relaxed)
                for log in logs where mine {
                    let (size, root) = try await log.head(ledger)
                    guard size > 0 else { continue }
                    let current = try await log.records.note(ledger, log.records.latest).flatMap { try? Checkpoint(text: $0.text) }
                    if current.map({ $0.size < size }) ?? true {
                        await log.beforeSigning(ledger)
                        let note = try log.signer().sign(size: size, root: root)
                        try await log.records.startLatest(ledger, note: note, size: size, policy: configuration.policy)
                    }
                }
                let behind = current.withLock { $0.behind }
                for (log, gauges) in behind.enumerated() {
                    for (k, status) in try await status(log: log).enumerated() where k < gauges.count { gauges[k].set(Double(status.behind)) }
                }
            } catch {
                logger.warning("witnessing: a round failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: configuration.interval)
        }
    }

    /// One witness's loop for one log: while this server leads, send it the log's latest checkpoint until it cosigns it.
    private func serve(_ peer: WitnessPeer, client: HTTPClient) async {
        while !Task.isCancelled {
            var wait = configuration.interval
            if leader.load(ordering: .relaxed), !peer.isRefused, let latest = try? await peer.log.records.note(ledger, peer.log.records.latest),
               latest.cosignatures(by: peer.witness.key).isEmpty {
                do {
                    try await peer.push(latest, collector: self, client: client)
                    peer.succeeded()
                } catch where !Task.isCancelled {
                    wait = max(wait, peer.failed(error, maxBackoff: configuration.maxBackoff, logger: logger))
                } catch {
                    return
                }
            }
            try? await Task.sleep(for: wait)
        }
    }

    /// Whether this server holds the lease (sends to the witnesses) as of its last round.
    var isLeader: Bool { leader.load(ordering: .relaxed) }

    /// Per witness of a log (0: the log, 1: the index log, as in `logs`): its label, the size
    /// of that log it holds, how many entries it is behind that log's head, and its last error.
    func status(log k: Int = 0) async throws -> [(label: String, held: UInt64?, behind: UInt64, error: String?)] {
        let log = logs[k]
        let size = try await log.head(ledger).size
        var out: [(label: String, held: UInt64?, behind: UInt64, error: String?)] = []
        for p in current.withLock({ $0.peers[k] }) {
            let held = try await log.records.heldSize(ledger, p.witness.label)
            out.append((p.witness.label, held, size > (held ?? 0) ? size - (held ?? 0) : 0, p.lastError))
        }
        return out
    }
}

extension WitnessCollector {
    /// `/health`'s `witnesses`: per witness its label, held size, lag in entries and last
    /// error for the log, and the same for the index log under `users`.
    func healthJSON() async throws -> JSON {
        func fields(_ s: (label: String, held: UInt64?, behind: UInt64, error: String?)) -> [(String, JSON)] {
            [("size", s.held.map { .int(Int64($0)) } ?? .null), ("behind", .int(Int64(s.behind))), ("error", s.error.map { .string($0) } ?? .null)]
        }
        let (log, users) = (try await status(log: 0), try await status(log: 1))
        return .array(zip(log, users).map { l, u in
            .object([("witness", .string(l.label))] + fields(l) + [("users", .object(fields(u)))])
        })
    }

    /// `GET /checkpoint` (`GET /users/checkpoint` with `.users`): the newest checkpoint
    /// meeting the quorum, with its cosignatures (nil: none yet).
    func quorumCheckpoint(_ records: WitnessRecords = .log) async throws -> [UInt8]? { try await ledger.metaRecord(records.quorum) }


    /// `GET /checkpoint/latest`: the stored latest checkpoint (with the cosignatures it has)
    /// when it is of the head; else the head's, freshly signed.
    func latestCheckpoint() async throws -> [UInt8] {
        let head = try await ledger.treeHead().size
        if let stored = try await ledger.metaRecord(WitnessRecords.log.latest), let note = try? SignedNote(parsing: stored),
           let cp = try? Checkpoint(text: note.text), cp.size == head {
            return stored
        }
        return Array(try await ledger.checkpoint(signer: signer()).utf8)
    }
}
