import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import Foundation

/// Benchmark phases of SPEC 1.5: the cost of salted commitments, and erasure.
extension BenchRun {
    /// `append_bulk` again on a fresh store with commitments off (personal values hashed
    /// in clear): the same workload, so the ratio is the commitments' cost.
    func appendBulkClear() async throws -> (wall: Double, cpu: Double) {
        let ledger = try await Ledger(lmdb: base + "/ledger-clear")
        ledger.appendSwitches.sealPersonalData.store(false, ordering: .relaxed)
        return try await appendBulk(ledger)
    }

    /// Erases a user with `userEvents` events (each with a personal value) in `ledger`
    /// after its other phases: seconds for the erasure (append, delete, compaction and
    /// swap), and the store's size in MB.
    func eraseUser(_ ledger: Ledger, userEvents: Int) async throws -> (seconds: Double, storeMB: Double, erased: Int) {
        let user = "bench-erased"
        var t = BenchRun.start.milliseconds
        var batch: [EventInput] = []
        func add(_ type: EventType, _ data: EventData) {
            t += 1000
            batch.append(EventInput(event: Event(type: type, user: user, at: Timestamp(milliseconds: t), data: data,
                                                 meta: StringMap([("actor", "user"), ("ip", "198.51.100.\(batch.count % 250)")]))))
        }
        var d = EventData()
        d[.deviceId] = .string("d1"); d[.name] = .string("Erased user's phone"); d[.kind] = .string("mobile")
        d[.binding] = .string("permanent"); d[.via] = .string("initial"); d[.pushToken] = .string("apns-erased-user")
        add(.registered, d)
        var a = EventData()
        a[.deviceId] = .string("d1")
        for _ in 1..<userEvents {
            add(.accessed, a)
            if batch.count == BenchRun.batch { _ = try await ledger.append(batch); batch = [] }
        }
        if !batch.isEmpty { _ = try await ledger.append(batch) }
        var outcome: ErasureOutcome?
        let seconds = try await BenchRun.seconds { outcome = try await ledger.erase(user, reason: "bench") }
        var size = 0.0
        if let attrs = try? FileManager.default.attributesOfItem(atPath: base + "/ledger/data.mdb"), let n = attrs[.size] as? NSNumber {
            size = n.doubleValue / 1e6
        }
        return (seconds, size, outcome?.erasedEvents ?? 0)
    }
}
