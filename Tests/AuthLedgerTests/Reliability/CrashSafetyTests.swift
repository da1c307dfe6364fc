import Foundation
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import LMDB
import AuthLedgerTestSupport
import Testing

/// Crash safety: a real `authledger` process appends (commands, import batches, whole
/// imports) and is killed with SIGKILL at random moments. After each kill the store
/// must verify, hold every acknowledged event where it was acknowledged, show every
/// batch and import all-or-nothing, and have projections equal to a replay.
///
/// `AUTHLEDGER_CRASH_ROUNDS` sets the number of rounds (tools/crash-test runs many).
@Suite(.serialized) struct CrashSafetyTests {
    /// A fixture file for one fresh user: an initial registration, then `n` accesses, each with an id.
    static func importFile(user: String, events n: Int) -> (text: String, ids: [String]) {
        var lines: [String] = []
        var ids: [String] = []
        func add(_ json: String) {
            let id = UUID().uuidString.lowercased()
            ids.append(id)
            lines.append(#"{"id":"\#(id)","#+json.dropFirst())
        }
        add(#"{"type":"device.registered","user":"\#(user)","at":"2026-03-01T09:00:00Z","data":{"deviceId":"d0","name":"Import phone","kind":"mobile","binding":"permanent","via":"initial"}}"#)
        for i in 0..<n {
            let t = Timestamp(rfc3339: "2026-03-01T09:00:00Z")!.adding(seconds: Int64(i + 1)).formatted
            add(#"{"type":"device.accessed","user":"\#(user)","at":"\#(t)","data":{"deviceId":"d0"}}"#)
        }
        return (lines.joined(separator: "\n") + "\n", ids)
    }

    @Test(arguments: StorageKind.all) func killedWritersNeverLoseAcknowledgedEventsNorShowHalfWrites(_ storage: StorageKind) async throws {
        // Given one store that every round reopens after the previous kill
        let rounds = Rig.knob("AUTHLEDGER_CRASH_ROUNDS", 6)
        let dir = try Rig.tempDir("crash")
        let store = storage == .lmdb ? dir + "/store" : storage.freshStore()
        let keys = Rig.keyEnvironment(storage, store)
        var totalAcks = 0, totalLost = 0, importsKilled = 0, importsCompleted = 0
        for round in 0..<rounds {
            if round % 3 == 2 {
                // When a whole `import` is killed at a random moment
                let (text, ids) = Self.importFile(user: "imp\(round)", events: 1000)
                let file = dir + "/import\(round).jsonl"
                try text.write(toFile: file, atomically: true, encoding: .utf8)
                let child = try Rig.Child(["import", "--store", store, file], environment: keys)
                usleep(UInt32.random(in: 0...400_000))
                child.kill9()
                let completed = child.process.terminationReason == .exit && child.process.terminationStatus == 0
                if completed { importsCompleted += 1 } else { importsKilled += 1 }
                // Then it is all there or not at all (and all there when it said it finished)
                let present = Set(try await Rig.events(store).map { $0.id.description })
                let count = ids.filter(present.contains).count
                #expect(count == 0 || count == ids.count, "round \(round): import half visible (\(count) of \(ids.count))")
                if completed { #expect(count == ids.count, "round \(round): a completed import is missing events") }
                let findings = try await StoreCheck.check(store: store, report: StressReport([]), projectionsOf: ["imp\(round)"])
                #expect(findings.problems.isEmpty, "round \(round): \(findings)")
            } else {
                // When a stress writer (commands and batches from 4 tasks) is killed
                let child = try Rig.Child(["stress-append", "--store", store, "--prefix", "r\(round)-", "--users", "3",
                                           "--tasks", "4", "--count", "0", "--mode", "mixed", "--batch", "25"], environment: keys)
                var waited = 0
                while child.lines.isEmpty && waited < 30_000 && child.process.isRunning { usleep(10_000); waited += 10 }
                usleep(UInt32.random(in: 0...500_000))
                child.kill9()
                let report = StressReport(child.lines)
                // Then nothing acknowledged is lost and nothing half-written is visible
                let findings = try await StoreCheck.check(store: store, report: report, projectionsOf: Set(report.acks.map(\.stream)))
                totalAcks += report.acks.count
                totalLost += findings.lostAcks
                #expect(!report.acks.isEmpty, "round \(round): the writer acknowledged nothing before the kill")
                #expect(findings.problems.isEmpty, "round \(round): \(findings)")
            }
        }
        // And at the end every user's projection still equals a replay
        let final = try await StoreCheck.check(store: store, report: StressReport([]))
        #expect(final.problems.isEmpty, "\(final)")
        #expect(totalLost == 0)
        print("crash-safety: \(rounds) rounds survived, \(totalAcks) acknowledged events, \(totalLost) lost, imports killed \(importsKilled) / completed \(importsCompleted)")
    }

    // LMDB only: it copies data.mdb under an LMDB read transaction (a PostgreSQL backup is the database's own).
    @Test func aCopyOfTheStoreTakenWhileAWriterRunsOpensAndVerifies() async throws {
        // Given a writer appending to a store
        let dir = try Rig.tempDir("torn")
        let store = dir + "/store"
        let child = try Rig.Child(["stress-append", "--store", store, "--prefix", "t-", "--users", "3",
                                   "--tasks", "4", "--count", "0", "--mode", "mixed"])
        defer { child.kill9() }
        var waited = 0
        while child.lines.isEmpty && waited < 30_000 && child.process.isRunning { usleep(10_000); waited += 10 }
        // When its files are copied mid-flight, under a read transaction as LMDB's backup rule asks
        var copies: [String] = []
        for k in 0..<3 {
            usleep(UInt32.random(in: 50_000...250_000))
            let copy = dir + "/copy\(k)"
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: false)
            let env = try Environment(path: store)
            try env.read { _ in
                try FileManager.default.copyItem(atPath: store + "/data.mdb", toPath: copy + "/data.mdb")
            }
            copies.append(copy)
        }
        child.kill9()
        // Then every copy opens, verifies, and is a prefix of the final log
        let final = try await Rig.events(store)
        for copy in copies {
            let ledger = try await Ledger(lmdb: copy)
            let head = try await ledger.verify()
            #expect(head.seq > 0)
            let events = try await ledger.events()
            #expect(events.count <= final.count)
            #expect(zip(events, final).allSatisfy { $0.hash == $1.hash }, "copy \(copy) diverges from the store")
        }
    }
}
