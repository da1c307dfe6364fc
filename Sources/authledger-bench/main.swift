import ArgumentParser
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import Foundation

// `authledger bench` runs this executable (its own target, so the CLI links neither LMDB
// nor SQLite directly: the raw ceilings live here). Exit codes as the CLI's: 0 ok,
// 1 failed (`error: <code>: …` on stderr), 2 usage.
func runBench() async -> Int32 {
    do {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "ssf" {
            // `authledger bench-ssf`: Shared Signals signing and delivery.
            let options = try SSFBenchOptions.parse(Array(arguments.dropFirst()))
            print(try await SSFBench.run(events: options.events, rate: options.rate).serialized())
            return 0
        }
        var command = try Bench.parseAsRoot(arguments)
        if var bench = command as? Bench {
            try await bench.run()
        } else {
            try command.run()  // --help, --version
        }
        return 0
    } catch let error as LedgerError {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        return 1
    } catch {
        let code = Bench.exitCode(for: error)
        if code == .success { Bench.exit(withError: error) }
        FileHandle.standardError.write(Data((Bench.fullMessage(for: error) + "\n").utf8))
        return code == .validationFailure ? 2 : 1
    }
}
/// `authledger-bench ssf`'s options (`authledger bench-ssf` checked them).
struct SSFBenchOptions: ParsableArguments {
    @Option var events = 10_000
    @Option var rate = 2000
}

exit(await runBench())
