import ArgumentParser
import AuthLedger
import Foundation
import Synchronization

/// Internal helper of the crash and concurrency harnesses (hidden from help): appends
/// in a loop from several tasks and reports, on stdout, one line per event **after**
/// the durable commit that carried it:
///
/// - `ack SEQ ID USER VERSION` — an acknowledged event;
/// - `intent ID,ID,…` — printed *before* a batch is submitted (all or none may appear);
/// - `conflict ID USER EXPECTED` — refused with `version_conflict` (mode `expect`);
/// - `refused CODE ID,ID,…` — refused otherwise (nothing of it may appear).
///
/// Users are `PREFIX` + `u0…u(N-1)`; every task picks users at random, so tasks and
/// processes sharing a prefix race on the same streams.
struct StressAppend: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stress-append", abstract: "Internal: append in a loop, reporting acknowledged events.",
        shouldDisplay: false)

    enum Mode: String, ExpressibleByArgument, Sendable {
        /// Commands only (clock read inside the write transaction).
        case commands
        /// Fixture batches through the import path (`submit`), all-or-nothing each.
        case batches
        /// Both, chosen at random.
        case mixed
        /// Single events with an expected stream version read just before (optimistic concurrency).
        case expect
    }

    @OptionGroup var global: GlobalOptions
    @Option(help: "User key prefix.") var prefix = "s-"
    @Option(help: "Number of users.") var users = 4
    @Option(help: "Operations per task (0: until killed).") var count = 100
    @Option(help: "Concurrent tasks in this process.") var tasks = 4
    @Option(help: "commands, batches, mixed or expect.") var mode: Mode = .mixed
    @Option(help: "Events per batch.") var batch = 20

    func run() async throws {
        let ledger = try await global.openLedger()
        try await StressAppend.body(ledger, prefix: prefix, users: users, count: count, tasks: tasks, mode: mode, batch: batch)
    }

    static func body(_ ledger: Ledger, prefix: String, users: Int, count: Int, tasks: Int, mode: Mode, batch: Int) async throws {
        let out = Reporter()
        // Cooling off and generous limits, so that every kind of operation keeps being accepted.
        out.report(try await ledger.perform(.setPolicy(PolicySet(coolingSeconds: 0, otpPerHour: 1_000_000, maxDevices: 100_000))))
        let names = (0..<max(1, users)).map { "\(prefix)u\($0)" }
        for user in names {
            do {
                out.report(try await ledger.perform(.register(user: user, deviceId: "d0", name: "Device zero", kind: "mobile", platform: nil, appId: nil,
                                                              pushToken: nil, binding: "permanent", via: "initial", grantId: nil, challengeId: nil)))
            } catch let e as LedgerError where e.code == .deviceExists || e.code == .verificationRequired {
                // Another process of the same run registered it first.
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<max(1, tasks) {
                group.addTask {
                    var i = 0
                    while count == 0 || i < count {
                        i += 1
                        let user = names.randomElement()!
                        let op: Mode = mode == .mixed ? (Bool.random() ? .commands : .batches) : mode
                        switch op {
                        case .commands: try await StressAppend.command(ledger, user: user, tag: "p\(getpid())t\(task)n\(i)", out: out)
                        case .batches: try await StressAppend.batch(ledger, user: user, size: batch, out: out)
                        case .expect: try await StressAppend.expect(ledger, user: user, out: out)
                        case .mixed: break
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static func command(_ ledger: Ledger, user: String, tag: String, out: Reporter) async throws {
        let command: Command
        switch Int.random(in: 0..<6) {
        case 0: command = .access(user: user, deviceId: "d0")
        case 1: command = .issueChallenge(user: user, requestingDeviceId: "d0", action: "login", context: nil)
        case 2: command = .issueChallenge(user: user, requestingDeviceId: "x-\(tag)", action: "transaction", context: nil)
        case 3: command = try .sendOTP(user: user, channel: "email", target: "someone@example.com")
        case 4: command = .rename(user: user, deviceId: "d0", name: "Device \(tag)")
        default: command = try .register(user: user, deviceId: "d-\(tag)", name: "Extra \(tag)", kind: "desktop", platform: nil, appId: nil,
                                     pushToken: nil, binding: "temporary", via: "admin", grantId: nil, challengeId: nil)
        }
        do {
            out.report(try await ledger.perform(command))
        } catch let e as LedgerError {
            out.line("refused \(e.code.rawValue) -")
        }
    }

    static func batch(_ ledger: Ledger, user: String, size: Int, out: Reporter) async throws {
        let at = Timestamp.now()
        let inputs = (0..<max(1, size)).map { _ in
            var data = EventData()
            data[.deviceId] = .string("d0")
            return EventInput(event: Event(id: .random(), type: .accessed, user: user, at: at, data: data))
        }
        let ids = inputs.map { $0.event.id!.description }.joined(separator: ",")
        out.line("intent \(ids)")
        do {
            let outcome = try await ledger.append(AppendRequest(inputs))
            out.report(outcome.appended)
        } catch let e as LedgerError {
            out.line("refused \(e.code.rawValue) \(ids)")
        }
    }

    static func expect(_ ledger: Ledger, user: String, out: Reporter) async throws {
        let version = try await ledger.state(of: user, asOf: .max).state.version
        var data = EventData()
        data[.deviceId] = .string("d0")
        let event = Event(id: .random(), type: .accessed, user: user, at: Timestamp.now(), data: data)
        do {
            let outcome = try await ledger.append(AppendRequest([EventInput(event: event)], expectedVersions: [user: version]))
            out.report(outcome.appended)
        } catch let e as LedgerError where e.code == .versionConflict {
            out.line("conflict \(event.id!) \(user) \(version)")
        } catch let e as LedgerError {
            out.line("refused \(e.code.rawValue) \(event.id!)")
        }
    }
}

/// Writes whole lines to stdout with one `write(2)` each, so lines from several tasks never interleave.
final class Reporter: Sendable {
    private let lock = Mutex(())

    func line(_ s: String) {
        let bytes = Array((s + "\n").utf8)
        lock.withLock { _ in
            var off = 0
            while off < bytes.count {
                let n = bytes[off...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
                if n <= 0 { if errno == EINTR { continue }; return }
                off += n
            }
        }
    }

    func report(_ result: CommandResult) { report(result.events) }

    func report(_ events: [RecordedEvent]) {
        guard !events.isEmpty else { return }
        line(events.map { "ack \($0.seq) \($0.id) \($0.event.stream) \($0.version)" }.joined(separator: "\n"))
    }
}
