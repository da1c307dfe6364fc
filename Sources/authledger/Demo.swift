import ArgumentParser
import AuthLedger
import Foundation

/// Imports the recorded scenarios under Fixtures/scenarios into the store (idempotent:
/// they carry explicit ids) and shows each user's devices, cooling window and pending
/// challenges as of the end of their history.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Load the recorded scenarios into the store and show their projections.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The scenarios folder (default: Fixtures/scenarios of this checkout).") var fixtures: String?

    func run() async throws {
        guard let dir = fixtures ?? Demo.locateScenarios() else {
            throw LedgerError(.invalidEvent, "cannot find Fixtures/scenarios; pass --fixtures DIR")
        }
        let ledger = try await global.openLedger()
        let users = try await Demo.loadScenarios(from: dir, into: ledger) { name, outcome in
            Output.line("\(name): appended \(outcome.appended.count), already present \(outcome.duplicates)")
        }
        let head = try await ledger.head()
        Output.line("store \(global.storeName): head seq \(head.seq) hash \(head.hash)\n")
        for user in users {
            let last = try await ledger.history(user, QueryOptions(asOf: .max)).last?.event.at ?? Timestamp.now()
            let options = QueryOptions(asOf: last)
            let devices = try await ledger.devices(of: user, options)
            Output.line("== \(user), as of \(last) (its last event)")
            for d in devices.devices {
                Output.line("  \(d.deviceId)  \(d.status.name)  \"\(d.name ?? "")\"  via \(d.via ?? "-")")
            }
            Output.line("  " + Table.coolingLine(devices.cooling))
            let pending = try await ledger.pending(of: user, options)
            Output.line("  pending challenges: \(pending.isEmpty ? "none" : pending.map(\.challengeId).joined(separator: ", "))")
        }
        Output.line("\nTry: authledger devices USER --store \(global.storeName) --as-of TIME --json, authledger export | tools/verify-export.py")
    }

    /// Appends every recorded scenario of `dir` (its `*.jsonl` files but the
    /// `*.expect.jsonl` answers, in name order) to `ledger`, each file in one
    /// transaction; events already present (same id) are counted, not appended again.
    /// `onFile` hears each file's outcome. Returns the users, in order of appearance.
    /// A refusal names the file and line. `demo` and `serve --dev` both load this way.
    static func loadScenarios(from dir: String, into ledger: Ledger,
                              onFile: (String, AppendOutcome) -> Void = { _, _ in }) async throws -> [String] {
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".jsonl") && !$0.hasSuffix(".expect.jsonl") }.sorted()
        var users: [String] = []
        for name in files {
            let path = (dir as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            let decoded = try EventDecoder.decodeLines(Array(data), file: name)
            do {
                onFile(name, try await ledger.append(decoded.map(\.input)))
            } catch var e as LedgerError {
                if let i = e.index, i < decoded.count { e = e.at(file: name, line: decoded[i].line) }
                throw e
            }
            for (input, _) in decoded { if let u = input.event.user, !users.contains(u) { users.append(u) } }
        }
        return users
    }

    /// Looks for Fixtures/scenarios above the executable and the working directory.
    static func locateScenarios() -> String? {
        var candidates: [URL] = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent())
        for start in candidates {
            var dir = start
            for _ in 0..<6 {
                let path = dir.appendingPathComponent("Fixtures/scenarios").path
                var isDir: ObjCBool = false
                if FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue { return path }
                dir.deleteLastPathComponent()
            }
        }
        return nil
    }
}
