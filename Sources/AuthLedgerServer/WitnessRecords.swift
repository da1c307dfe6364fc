import AuthLedger
import AuthLedgerWitness
import Foundation

/// The witnessing state of one witnessed log kept in the ledger's meta records (the same
/// on LMDB and PostgreSQL, so every server of a shared store serves it), under `witness/`
/// for the log and `witness/users/` for the index log of user proofs:
/// - `latest`: the newest checkpoint sent to the witnesses, with the cosignature lines
///   gathered for it so far;
/// - `quorum`: the newest checkpoint whose cosignatures meet the quorum;
/// - `held/<label>`: the size a witness holds (from its 200s and 409s);
/// and, for both, `witness/lease`: which server sends to the witnesses (`<instance> <expiry ms>`).
struct WitnessRecords: Sendable {
    let latest: String
    let quorum: String
    private let prefix: String
    func held(_ label: String) -> String { prefix + "held/\(label)" }

    init(prefix: String) {
        self.prefix = prefix
        latest = prefix + "latest"
        quorum = prefix + "quorum"
    }

    /// The log's records.
    static let log = WitnessRecords(prefix: "witness/")
    /// The index log's (user proofs).
    static let users = WitnessRecords(prefix: "witness/users/")
    static let lease = "witness/lease"

    func note(_ ledger: Ledger, _ key: String) async throws -> SignedNote? {
        try await ledger.metaRecord(key).flatMap { try? SignedNote(parsing: $0) }
    }

    func heldSize(_ ledger: Ledger, _ label: String) async throws -> UInt64? {
        try await ledger.metaRecord(held(label)).flatMap { UInt64(String(decoding: $0, as: UTF8.self)) }
    }

    func setHeld(_ ledger: Ledger, _ label: String, _ size: UInt64) async throws {
        let key = held(label)
        try await ledger.updateMetaRecords { _, put in try put(key, Array("\(size)".utf8)) }
    }

    /// Takes or renews the lease for `instance` until `now + ttl` when it is free, expired or
    /// ours; ours with more than half its time left is kept as it is (no write).
    static func acquireLease(_ ledger: Ledger, instance: String, nowMs: Int64, ttlMs: Int64) async throws -> Bool {
        if let v = try await ledger.metaRecord(lease) {
            let parts = String(decoding: v, as: UTF8.self).split(separator: " ")
            if parts.count == 2, let expiry = Int64(parts[1]), expiry > nowMs {
                if parts[0] != instance { return false }
                if expiry - nowMs > ttlMs / 2 { return true }
            }
        }
        return try await ledger.updateMetaRecords(reading: [lease]) { get, put in
            if let v = try get(lease) {
                let parts = String(decoding: v, as: UTF8.self).split(separator: " ")
                if parts.count == 2, parts[0] != instance, let expiry = Int64(parts[1]), expiry > nowMs { return false }
            }
            try put(lease, Array("\(instance) \(nowMs + ttlMs)".utf8))
            return true
        }
    }

    /// Makes `note` (a freshly signed checkpoint) the latest unless a newer one is stored.
    /// With a quorum that needs no witness (`quorum none`) it is the quorum checkpoint too.
    func startLatest(_ ledger: Ledger, note: String, size: UInt64, policy: WitnessPolicy) async throws {
        try await ledger.updateMetaRecords(reading: [latest]) { get, put in
            if let old = try get(latest).flatMap({ try? SignedNote(parsing: $0) }),
               let cp = try? Checkpoint(text: old.text), cp.size >= size { return }
            try put(latest, Array(note.utf8))
            if policy.isMet(byWitnessesAt: []) { try put(quorum, Array(note.utf8)) }
        }
    }

    /// Records that witness `label` holds `size` and, in the same write, adds its
    /// cosignature `line` to the latest checkpoint when its text is `text`, storing it as
    /// the quorum checkpoint when it now meets `policy`'s quorum.
    func addCosignature(_ ledger: Ledger, label: String, size: UInt64, line: String, text: String, policy: WitnessPolicy) async throws {
        let heldKey = held(label)
        try await ledger.updateMetaRecords(reading: [latest, quorum]) { get, put in
            try put(heldKey, Array("\(size)".utf8))
            guard let bytes = try get(latest), let note = try? SignedNote(parsing: bytes), note.text == text else { return }
            let updated = note.signatures.contains(where: { $0.line == line }) ? bytes : bytes + Array(line.utf8)
            if updated != bytes { try put(latest, updated) }
            guard let cosigned = try? SignedNote(parsing: updated), policy.isMet(by: cosigned),
                  let size = try? Checkpoint(text: text).size else { return }
            if let q = try get(quorum).flatMap({ try? SignedNote(parsing: $0) }), let qs = try? Checkpoint(text: q.text).size,
               qs > size { return }
            try put(quorum, updated)
        }
    }
}
