import ArgumentParser
import AuthLedger
import Foundation

struct Erase: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Erase a user's personal data: append user.erased, destroy the values and salts, compact the store.",
        discussion: "Hashes, checkpoints and proofs stay valid: the log hashes salted commitments, not the values.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument(help: "The user whose personal values are erased.") var user: String
    @Option(help: "Why (recorded in the user.erased event).") var reason: String?

    func run() async throws {
        let ledger = try await global.openLedger()
        let outcome = try await ledger.erase(user, reason: reason, actor: try actor.meta()?["actor"], now: try global.clock()())
        if global.json {
            Output.json(.object([
                ("user", .string(user)), ("erased", .bool(true)), ("erasedEvents", .int(Int64(outcome.erasedEvents))),
                ("events", .array([.object([("seq", .int(Int64(outcome.event.seq))), ("type", .string(outcome.event.event.type.name))])])),
            ]))
        } else {
            Output.line("\(outcome.event.seq)")
            Output.line("erased the personal values of \(outcome.erasedEvents) events of \(user); head seq \(outcome.head.seq) hash \(outcome.head.hash)")
        }
    }
}
