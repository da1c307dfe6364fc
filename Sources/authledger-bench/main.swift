import ArgumentParser
@_spi(Storage) import AuthLedger
import Foundation

// `authledger bench` runs this executable (its own target, so the CLI links neither LMDB
// nor SQLite directly: the raw ceilings live here). Exit codes as the CLI's: 0 ok,
// 1 failed (`error: <code>: …` on stderr), 2 usage.
func runBench() async -> Int32 {
    do {
        var command = try Bench.parseAsRoot(Array(CommandLine.arguments.dropFirst()))
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
exit(await runBench())
