import ArgumentParser
import AuthLedger
import Foundation

/// `authledger bench …`: runs the `authledger-bench` executable built beside this one, with
/// the same arguments. The benchmark is its own target because it measures raw LMDB and
/// SQLite ceilings, and the CLI links neither.
struct BenchForward: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure appends, replay and queries against raw LMDB and SQLite ceilings (runs authledger-bench).",
        discussion: "All options are those of authledger-bench: `authledger bench --help` shows them.")

    @Argument(parsing: .captureForPassthrough, help: "Options for authledger-bench.")
    var arguments: [String] = []

    func run() async throws { try BenchForward.exec(arguments) }

    /// Replaces this process with `authledger-bench ARGUMENTS…` (the executable built beside this one).
    static func exec(_ arguments: [String]) throws {
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let bench = me.deletingLastPathComponent().appendingPathComponent("authledger-bench").path
        guard FileManager.default.isExecutableFile(atPath: bench) else {
            throw LedgerError(.configurationError, "authledger-bench is not built beside \(me.path): build it with `swift build -c release --product authledger-bench`")
        }
        let argv = [bench] + arguments
        var cArgs = argv.map { strdup($0) } + [nil]
        execv(bench, &cArgs)
        throw LedgerError(.configurationError, "cannot run \(bench): \(String(cString: strerror(errno)))")
    }
}
