import ArgumentParser
import AuthLedger
import Foundation

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Append fixture or recorded JSONL files atomically (- for stdin).")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "JSONL files; - reads standard input.") var files: [String]

    func run() async throws {
        guard !files.isEmpty else { throw ValidationError("name at least one file") }
        var inputs: [EventInput] = []
        var origins: [(file: String, line: Int)] = []
        for file in files {
            let bytes: [UInt8]
            if file == "-" {
                bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
            } else {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw LedgerError(.invalidEvent, "\(file): cannot read the file")
                }
                bytes = Array(data)
            }
            let decoded = try EventDecoder.decodeLines(bytes, file: file)
            inputs += decoded.map(\.input)
            origins += decoded.map { (file, $0.line) }
        }
        let ledger = try await global.openLedger()
        do {
            let outcome = try await ledger.append(inputs)
            if global.json {
                Output.json(.object([("appended", .int(Int64(outcome.appended.count))), ("duplicates", .int(Int64(outcome.duplicates))),
                                     ("head", .object([("seq", .int(Int64(outcome.head.seq))), ("hash", .string(outcome.head.hash.description))]))]))
            } else {
                Output.line("appended \(outcome.appended.count) events (\(outcome.duplicates) duplicates skipped); head seq \(outcome.head.seq) hash \(outcome.head.hash)")
            }
        } catch var e as LedgerError {
            if let i = e.index, i < origins.count { e = e.at(file: origins[i].file, line: origins[i].line) }
            throw e
        }
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write the recorded events as JSONL to stdout.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "Only this user's events.") var user: String?
    @Option(help: "Start at this seq (inclusive).") var from: UInt64 = 1

    func run() async throws {
        // A user key (SPEC 1.1), or the policy stream `$system` for auditors.
        if let user, user != systemStream { try EventDecoder.checkUser(user) }
        let ledger = try await global.openLedger()
        // Read a page per read transaction and write it with none open: a reader that
        // stops reading (`| head -1`) blocks or kills this process while it holds no
        // LMDB reader slot, so no old snapshot stays pinned. Up to the head at the start.
        let through = try await ledger.head().seq
        var next = from
        while next <= through {
            let page = try await ledger.events(from: next, limit: 4096, user: user).filter { $0.seq <= through }
            guard let last = page.last else { break }
            var buffer = Data()
            for e in page {
                buffer.append(contentsOf: Array(e.json.serialized().utf8))
                buffer.append(10)
            }
            FileHandle.standardOutput.write(buffer)
            next = last.seq + 1
        }
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Re-compute every hash and index; exit 1 naming the first bad seq.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let head = try await global.openLedger().verify()
        if global.json {
            Output.json(.object([("ok", .bool(true)), ("head", .object([("seq", .int(Int64(head.seq))), ("hash", .string(head.hash.description))]))]))
        } else {
            Output.line("ok: \(head.seq) events verified; head seq \(head.seq) hash \(head.hash)")
        }
    }
}

struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rebuild every projection from the log.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let ledger = try await global.openLedger()
        let start = DispatchTime.now()
        let showProgress = Output.stderrIsTerminal && !global.json
        let n = try await ledger.replay { done, total in
            guard showProgress, total > 0 else { return }
            let width = 40
            let filled = Int(Double(done) / Double(total) * Double(width))
            Output.errorInline("\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] \(done)/\(total)")
        }
        if showProgress { Output.error("") }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        if global.json {
            Output.json(.object([("replayed", .int(Int64(n))), ("seconds", .number(String(format: "%.3f", seconds)))]))
        } else {
            Output.line("replayed \(n) events in \(String(format: "%.3f", seconds)) s")
        }
    }
}

extension Output {
    static func errorInline(_ s: String) {
        FileHandle.standardError.write(Data(s.utf8))
    }
}

