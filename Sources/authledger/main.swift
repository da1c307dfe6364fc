import ArgumentParser
import AuthLedger
import Foundation

struct AuthLedgerCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authledger",
        abstract: "AuthLedger: an event-sourced, hash-chained ledger of device trust on LMDB.",
        discussion: "Exit codes: 0 ok, 1 refused or failed (error: <code>: … on stderr), 2 usage.",
        version: AuthLedgerVersion.current,
        subcommands: [
            Import.self, Export.self, Devices.self, Cooling.self, Pending.self, Challenge.self, History.self, Users.self,
            Verify.self, Replay.self,
            RequestVerification.self, Register.self, Rename.self, Revoke.self, RevokeAll.self, Access.self,
            UpdatePushToken.self, IssueChallenge.self, Approve.self, Deny.self, ExpireChallenges.self,
            SendOTP.self, VerifyOTP.self, SetPolicy.self, RotateKey.self, RedeemLink.self, Demo.self,
        ] + extraSubcommands
    )
}

/// Global options written before the subcommand (`authledger --store X devices u`) are
/// moved after it, where every subcommand declares them.
func normalisedArguments(_ args: [String]) -> [String] {
    var leading: [String] = []
    var i = 0
    while i < args.count, args[i].hasPrefix("--") {
        let a = args[i]
        if a == "--json" || a.hasPrefix("--store=") || a.hasPrefix("--now=") {
            leading.append(a); i += 1
        } else if (a == "--store" || a == "--now") && i + 1 < args.count {
            leading += [a, args[i + 1]]; i += 2
        } else {
            break
        }
    }
    guard !leading.isEmpty, i < args.count else { return args }
    return [args[i]] + leading + Array(args[(i + 1)...])
}

/// Runs an async subcommand. Called from top-level code, `asyncCommand.run()` resolves
/// to the synchronous `run()` (which only prints help); inside an async function the
/// async overload wins.
func runAsync(_ command: inout any AsyncParsableCommand) async throws {
    try await command.run()
}

let arguments = normalisedArguments(Array(CommandLine.arguments.dropFirst()))
// No subcommand at all is a usage error (exit 2), with the help on stderr.
if arguments.isEmpty {
    Output.error(AuthLedgerCLI.helpMessage())
    exit(2)
}
do {
    var command = try AuthLedgerCLI.parseAsRoot(arguments)
    if var asyncCommand = command as? AsyncParsableCommand {
        try await runAsync(&asyncCommand)
    } else {
        try command.run()
    }
} catch let error as LedgerError {
    Output.error("error: \(error)")
    // A setup mistake is the caller's to fix, as a usage error is.
    exit(error.code == .configurationError ? 2 : 1)
} catch let error as CleanExit {
    _ = error
    AuthLedgerCLI.exit(withError: error)
} catch {
    let code = AuthLedgerCLI.exitCode(for: error)
    if code == .success { AuthLedgerCLI.exit(withError: error) }
    let message = AuthLedgerCLI.fullMessage(for: error)
    if code == .validationFailure {
        Output.error(message)
        exit(2)
    }
    Output.error("error: storage_error: \(message)")
    exit(1)
}
