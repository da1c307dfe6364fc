import ArgumentParser
import AuthLedger
import Foundation

struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A user's devices and cooling window.")

    @OptionGroup var global: GlobalOptions
    @Argument var user: String
    @OptionGroup var query: QueryArguments

    func run() async throws {
        let answer = try await global.openLedger().devices(of: user, try query.options(global))
        if global.json { return Output.json(answer.json) }
        Output.line("\(user) at position \(answer.position), as of \(answer.asOf.formatted)")
        if answer.devices.isEmpty { Output.line("(no devices)") }
        let rows = answer.devices.map { d -> [String] in
            [d.deviceId + (d.current ? "*" : ""), d.status.name, d.name ?? "-", d.kind ?? "-", d.via ?? "-",
             d.registeredAt?.formatted ?? ("requested " + (d.requestedAt?.formatted ?? "-")), d.lastAccessAt?.formatted ?? "-",
             d.pushEnrolled ? "push" : ""]
        }
        Table.print(["DEVICE", "STATUS", "NAME", "KIND", "VIA", "REGISTERED", "LAST ACCESS", ""], rows)
        Output.line(Table.coolingLine(answer.cooling))
    }
}

struct Cooling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Whether a cooling window is open for a user.")

    @OptionGroup var global: GlobalOptions
    @Argument var user: String
    @OptionGroup var query: QueryArguments

    func run() async throws {
        let answer = try await global.openLedger().cooling(of: user, try query.options(global))
        if global.json { return Output.json(answer.json) }
        Output.line("\(user): " + Table.coolingLine(answer.cooling))
    }
}

struct Pending: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Challenges pending approval at the as-of time.")

    @OptionGroup var global: GlobalOptions
    @Argument var user: String
    @OptionGroup var query: QueryArguments

    func run() async throws {
        let answer = try await global.openLedger().pending(of: user, try query.options(global))
        if global.json { return Output.json(answer.json) }
        if answer.isEmpty { return Output.line("(no pending challenges)") }
        Table.print(["CHALLENGE", "ACTION", "REQUESTED BY", "ISSUED", "EXPIRES"], answer.map { c in
            [c.challengeId, c.action, c.requestingDeviceId, c.issuedAt.formatted, c.expiresAt.formatted]
        })
    }
}

struct Challenge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A challenge's status (and outcome, for the owner and auditors).")

    @OptionGroup var global: GlobalOptions
    @Argument var user: String
    @Argument var id: String
    @OptionGroup var query: QueryArguments
    @Flag(name: .customLong("as-requester"), help: "The requester's view: status only.") var asRequester = false
    @Option(name: .long, help: "Wait up to SECONDS (1-60) for the challenge to be no longer pending, then answer.")
    var wait: Int?

    func validate() throws {
        if let wait, !(1...60).contains(wait) { throw ValidationError("--wait must be whole seconds from 1 to 60") }
        if wait != nil, query.position != nil || query.asOf != nil {
            throw ValidationError("--wait follows the head, now: it does not go with --at or --as-of")
        }
    }

    func run() async throws {
        let ledger = try await global.openLedger()
        let answer: ChallengeView
        if let wait {
            ledger.setWatchClock(try global.clock())
            answer = try await ledger.awaitAnswer(user: user, challenge: id, timeout: .seconds(wait), asRequester: asRequester)
        } else {
            answer = try await ledger.challenge(id, of: user, try query.options(global, asRequester: asRequester))
        }
        if global.json { return Output.json(answer.json) }
        var s = "\(id): \(answer.status)"
        if let outcome = answer.outcome { s += " (\(outcome.name))" }
        Output.line(s)
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A user's events in order (recorded form).")

    @OptionGroup var global: GlobalOptions
    @Argument var user: String
    @OptionGroup var query: QueryArguments
    @Option(name: .long, help: "Only events with a seq greater than this (the last seq of the previous page).")
    var after: UInt64 = 0
    @Option(name: .long, help: "At most this many events (default: all).")
    var limit: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        if after > UInt64(Int64.max) { throw ValidationError("--after must be a seq (0...\(Int64.max))") }
    }

    func run() async throws {
        let events = try await global.openLedger().history(user, try query.options(global), page: HistoryPage(after: after, limit: limit))
        if global.json { return Output.json(.array(events.map(\.json))) }
        for e in events { Output.line(e.json.serialized()) }
    }
}

enum Table {
    static func print(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { i in all.map { $0[i].count }.max() ?? 0 }
        for row in all {
            Output.line(row.enumerated().map { i, c in c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
    }

    static func coolingLine(_ cooling: AuthLedgerCore.Cooling) -> String {
        if cooling.active {
            return "cooling: active until \(cooling.until?.formatted ?? "?") (status \(cooling.statusCode))"
        }
        return "cooling: inactive (status \(cooling.statusCode))"
    }
}
