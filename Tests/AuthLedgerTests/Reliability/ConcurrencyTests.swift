import Foundation
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import AuthLedgerTestSupport
import Testing

/// Concurrency: many tasks and several processes append to one store at once, on the
/// same and on different users. The total order is gap-free, stream versions are
/// unique and consecutive, expected-version races refuse exactly the losers, and no
/// maintained projection disagrees with a replay afterwards.
@Suite struct ConcurrencyTests {
    static func accessed(_ user: String, _ device: String = "d0", at: Timestamp = .now()) -> EventInput {
        var data = EventData()
        data[.deviceId] = .string(device)
        return EventInput(event: Event(id: .random(), type: .accessed, user: user, at: at, data: data))
    }

    static func registerInitial(_ ledger: Ledger, _ user: String) async throws {
        _ = try await ledger.perform(.register(user: user, deviceId: "d0", name: "Device zero", kind: "mobile", platform: nil, appId: nil,
                                               pushToken: nil, binding: "permanent", via: "initial", grantId: nil, challengeId: nil))
    }

    @Test(arguments: StorageKind.all) func manyTasksInOneProcessKeepAGapFreeOrderAndConsistentProjections(_ storage: StorageKind) async throws {
        // Given a store with a shared user and one user per task
        let store = try Rig.store(storage, "conc")
        let ledger = try await Ledger(store: store)
        let tasks = Rig.knob("AUTHLEDGER_CONCURRENCY_TASKS", 64)
        try await Self.registerInitial(ledger, "shared")
        for t in 0..<tasks { try await Self.registerInitial(ledger, "own\(t)") }
        // When every task appends commands on the shared user and batches on its own user
        let acks = try await withThrowingTaskGroup(of: [StressReport.Ack].self) { group in
            for t in 0..<tasks {
                group.addTask {
                    var mine: [StressReport.Ack] = []
                    func keep(_ events: [RecordedEvent]) {
                        mine += events.map { StressReport.Ack(seq: $0.seq, id: $0.id.description, stream: $0.event.stream, version: $0.version) }
                    }
                    for i in 0..<5 {
                        keep(try await ledger.perform(.access(user: "shared", deviceId: "d0")).events)
                        keep(try await ledger.perform(.issueChallenge(user: "shared", requestingDeviceId: "x\(t)-\(i)", action: "login", context: nil)).events)
                        keep(try await ledger.append(AppendRequest((0..<3).map { _ in Self.accessed("own\(t)") })).appended)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        // Then every acknowledged seq is distinct, the log has no gap, and projections equal a replay
        #expect(Set(acks.map(\.seq)).count == acks.count)
        #expect(acks.count == tasks * 5 * 5)
        var report = StressReport([])
        report.acks = acks
        let findings = try await StoreCheck.check(store: store, report: report)
        #expect(findings.problems.isEmpty, "\(findings)")
        #expect(findings.events == 1 + tasks + acks.count)
        let shared = try await ledger.state(of: "shared", asOf: .max).state
        #expect(shared.version == UInt64(1 + tasks * 5 * 2))
    }

    @Test(arguments: StorageKind.all) func anExpectedVersionRaceHasExactlyOneWinner(_ storage: StorageKind) async throws {
        // Given a user at some version
        let store = try Rig.store(storage, "race")
        let ledger = try await Ledger(store: store)
        try await Self.registerInitial(ledger, "alice")
        let racers = 8
        for round in 0..<Rig.knob("AUTHLEDGER_RACE_ROUNDS", 20) {
            let version = try await ledger.state(of: "alice", asOf: .max).state.version
            // When several tasks append with the same expected version at once
            let outcomes = await withTaskGroup(of: (EventID, Result<AppendOutcome, Error>).self) { group in
                for _ in 0..<racers {
                    group.addTask {
                        let input = Self.accessed("alice")
                        do {
                            return (input.event.id!, .success(try await ledger.append(AppendRequest([input], expectedVersions: ["alice": version]))))
                        } catch {
                            return (input.event.id!, .failure(error))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            // Then exactly one wins, at version + 1, and every loser is refused with version_conflict and absent
            let winners = outcomes.filter { if case .success = $0.1 { return true }; return false }
            #expect(winners.count == 1, "round \(round)")
            if case let .success(o)? = winners.first?.1 { #expect(o.appended.first?.version == version + 1) }
            for (id, r) in outcomes {
                guard case let .failure(e) = r else { continue }
                #expect((e as? LedgerError)?.code == .versionConflict, "round \(round): \(e)")
                #expect(try await ledger.events(user: "alice").allSatisfy { $0.id != id })
            }
            #expect(try await ledger.state(of: "alice", asOf: .max).state.version == version + 1)
        }
        try await ledger.verify()
    }

    @Test(arguments: StorageKind.all) func severalProcessesAppendingToOneStoreAgree(_ storage: StorageKind) async throws {
        // Given one store and five writer processes (commands, batches, expected versions) on shared users
        let store = try Rig.store(storage, "procs")
        let keys = Rig.keyEnvironment(storage, store)
        let count = Rig.knob("AUTHLEDGER_PROCESS_OPS", 25)
        let modes = ["commands", "commands", "batches", "expect", "expect"]
        let children = try modes.map { mode in
            try Rig.Child(["stress-append", "--store", store, "--prefix", "p-", "--users", "3", "--tasks", "4",
                           "--count", String(count), "--mode", mode, "--batch", "5"], environment: keys)
        }
        // When they all run to completion
        let statuses = children.map { $0.wait() }
        #expect(statuses.allSatisfy { $0 == 0 }, "\(statuses)")
        let reports = children.map { StressReport($0.lines) }
        var all = StressReport([])
        for r in reports {
            all.acks += r.acks
            all.intents += r.intents
            all.conflicts += r.conflicts
            all.refused += r.refused
        }
        // Then the log is exactly the acknowledged events, seq 1…n without gap or duplicate
        let findings = try await StoreCheck.check(store: store, report: all)
        #expect(findings.problems.isEmpty, "\(findings)")
        #expect(all.acks.map(\.seq).sorted() == Array(1...UInt64(findings.events)))
        // And the expected-version writers raced: every attempt either won at its version + 1 or lost
        let expectAttempts = reports[3].acks.count + reports[3].conflicts.count + reports[4].acks.count + reports[4].conflicts.count
        #expect(expectAttempts >= 2 * 4 * count)
        #expect(all.refused.filter { $0.code != "time_regression" }.isEmpty, "\(all.refused.map(\.code))")
    }
}
