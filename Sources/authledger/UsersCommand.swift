import ArgumentParser
import AuthLedger
import Foundation

/// `authledger users [--prefix P] [--after K] [--limit N] [--json]`: a page of the users.
struct Users: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The users, by key: each with its number of events and its latest event.",
        discussion: "A page at a time (--limit, default \(UserPage.defaultLimit)); when more follow, the last line names the next page's --after.")

    @OptionGroup var global: GlobalOptions
    @Option(name: .long, help: "Only users whose key starts with this.") var prefix = ""
    @Option(name: .long, help: "Only users whose key comes after this one (the previous page's last).") var after: String?
    @Option(name: .long, help: "At most this many users (1 to \(UserPage.maxLimit)).") var limit = UserPage.defaultLimit

    func validate() throws {
        // The messages name the option: "--limit must be an integer from 1 to …".
        do { _ = try UserPage(prefix: prefix, after: after, limit: limit) } catch { throw ValidationError("--" + error.message) }
    }

    func run() async throws {
        let list = try await global.openLedger().users(try UserPage(prefix: prefix, after: after, limit: limit))
        if global.json { return Output.json(list.json) }
        if list.users.isEmpty { Output.line("(no users)") }
        Table.print(["USER", "EVENTS", "LAST SEQ", "LAST EVENT AT"], list.users.map { u in
            [u.user, "\(u.events)", "\(u.lastSeq)", u.lastAt?.formatted ?? "-"]
        })
        // Quoted for a POSIX shell: a key may hold spaces or quotes.
        if let next = list.next { Output.line("more: --after '" + next.replacingOccurrences(of: "'", with: #"'\''"#) + "'") }
    }
}
