import Foundation
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import AuthLedgerTestSupport

/// Shared helpers of the reliability suites: temporary stores, the real `authledger`
/// binary as a child process, and reading a store back for checks.
enum Rig {
    /// The package root (this file is Tests/AuthLedgerTests/Reliability/ReliabilityRig.swift).
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func fixtures(_ path: String) -> URL { root.appendingPathComponent("Fixtures").appendingPathComponent(path) }

    /// A fresh directory under the system temporary directory (the store goes in `store` inside it).
    static func tempDir(_ tag: String = "rel") throws -> String {
        TemporaryDirectory.make("authledger-\(tag)")
    }

    /// A new empty store on `storage` for the CLI's `--store`: `store` in a fresh temporary
    /// directory, or a PostgreSQL URL with a schema of its own.
    static func store(_ storage: StorageKind, _ tag: String = "rel") throws -> String {
        storage == .lmdb ? try tempDir(tag) + "/store" : storage.freshStore()
    }

    /// What a CLI child on `store` needs in its environment: a PostgreSQL store keeps the
    /// files beside the log (the OTP server key) in `AUTHLEDGER_KEY_DIR`, a new temporary directory.
    static func keyEnvironment(_ storage: StorageKind, _ store: String) -> [String: String] {
        storage == .lmdb ? [:] : ["AUTHLEDGER_KEY_DIR": storage.keyDirectory(for: store)]
    }

    /// An integer knob from the environment (the long runs in tools/ set them), else `fallback`.
    static func knob(_ name: String, _ fallback: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? fallback
    }

    private static let buildLock = NSLock()
    nonisolated(unsafe) private static var cachedBinary: String?

    /// The `authledger` executable of this build; built first when missing.
    static func binary() throws -> String {
        buildLock.lock()
        defer { buildLock.unlock() }
        if let b = cachedBinary { return b }
        let fm = FileManager.default
        let products = Bundle.main.bundleURL.deletingLastPathComponent()
        let candidates = [products.appendingPathComponent("authledger").path,
                          Bundle.main.bundleURL.appendingPathComponent("authledger").path,
                          root.appendingPathComponent(".build/debug/authledger").path]
        if let found = candidates.first(where: { fm.isExecutableFile(atPath: $0) }) {
            cachedBinary = found
            return found
        }
        let build = Process()
        build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        build.arguments = ["swift", "build", "--package-path", root.path, "--product", "authledger"]
        try build.run()
        build.waitUntilExit()
        guard let found = candidates.first(where: { fm.isExecutableFile(atPath: $0) }) else {
            throw RigError("authledger binary not found after building it")
        }
        cachedBinary = found
        return found
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var stdoutBytes: [UInt8]
    }

    /// Runs `authledger ARGS` to completion.
    @discardableResult
    static func cli(_ args: [String], stdin: [UInt8]? = nil, environment: [String: String] = [:]) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try binary())
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        env["AUTHLEDGER_STORE"] = nil
        env["AUTHLEDGER_SERVER_KEY_FILE"] = nil
        for (k, v) in environment { env[k] = v }
        p.environment = env
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = inp
        try p.run()
        if let stdin { inp.fileHandleForWriting.write(Data(stdin)) }
        try? inp.fileHandleForWriting.close()
        // Drain both pipes concurrently so that a chatty child never blocks.
        let errData = LockedData()
        let t = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        t.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        while !errData.done { usleep(1000) }
        return Result(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData.data, as: UTF8.self), stdoutBytes: Array(outData))
    }

    /// A child process whose stdout is collected while it runs, and that can be killed with SIGKILL.
    final class Child: @unchecked Sendable {
        let process = Process()
        private let collected = LockedData()

        init(_ args: [String], environment: [String: String] = [:]) throws {
            process.executableURL = URL(fileURLWithPath: try Rig.binary())
            process.arguments = args
            if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let handle = out.fileHandleForReading
            let sink = collected
            Thread {
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    sink.append(chunk)
                }
                sink.finish()
            }.start()
        }

        /// Lines printed so far (complete lines only).
        var lines: [String] {
            let text = String(decoding: collected.data, as: UTF8.self)
            var parts = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            parts.removeLast()  // the part after the last newline is not a complete line
            return parts
        }

        func kill9() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            while !collected.done { usleep(1000) }
        }

        /// Waits for a normal exit; returns its status.
        func wait() -> Int32 {
            process.waitUntilExit()
            while !collected.done { usleep(1000) }
            return process.terminationStatus
        }
    }

    /// Every recorded event of the store (an LMDB directory or a PostgreSQL URL), read
    /// in-process (no writer may run meanwhile).
    static func events(_ store: String) async throws -> [RecordedEvent] {
        try await Ledger(store: store).events()
    }

    /// Files of the store directory with their bytes (for byte-identity checks).
    static func snapshot(_ store: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: store) where name != "lock.mdb" {
            out[name] = Array(FileManager.default.contents(atPath: store + "/" + name) ?? Data())
        }
        return out
    }
}

struct RigError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Bytes appended by one thread and read by another.
/// What a harness child reported (see `authledger stress-append`).
struct StressReport {
    struct Ack: Hashable { var seq: UInt64; var id: String; var stream: String; var version: UInt64 }
    var acks: [Ack] = []
    var intents: [[String]] = []
    var conflicts: [(id: String, user: String, expected: UInt64)] = []
    var refused: [(code: String, ids: [String])] = []

    init(_ lines: [String]) {
        for line in lines {
            let f = line.split(separator: " ").map(String.init)
            switch f.first {
            case "ack" where f.count == 5: acks.append(Ack(seq: UInt64(f[1])!, id: f[2], stream: f[3], version: UInt64(f[4])!))
            case "intent" where f.count == 2: intents.append(f[1].split(separator: ",").map(String.init))
            case "conflict" where f.count == 4: conflicts.append((f[1], f[2], UInt64(f[3])!))
            case "refused" where f.count == 3: refused.append((f[1], f[2] == "-" ? [] : f[2].split(separator: ",").map(String.init)))
            default: break
            }
        }
    }
}

/// The invariants every harness checks on a store once no writer runs: the chain
/// verifies, every acknowledged event is where it was acknowledged, every batch is
/// all-or-nothing, refused work left nothing, and maintained projections equal a replay.
enum StoreCheck {
    struct Findings: CustomStringConvertible {
        var problems: [String] = []
        var events = 0
        var lostAcks = 0
        var description: String { problems.prefix(10).joined(separator: "\n") }
    }

    /// `projectionsOf` limits the projection-versus-replay comparison to those users (nil: every user).
    static func check(store: String, report: StressReport, projectionsOf: Set<String>? = nil) async throws -> Findings {
        var f = Findings()
        let ledger = try await Ledger(store: store)
        do { try await ledger.verify() } catch { f.problems.append("verify: \(error)") }
        let events = try await ledger.events()
        f.events = events.count
        var byId: [String: RecordedEvent] = [:]
        for e in events { byId[e.id.description] = e }
        for (i, e) in events.enumerated() where e.seq != UInt64(i + 1) { f.problems.append("gap at \(i + 1): seq \(e.seq)"); break }
        for a in report.acks {
            guard let e = byId[a.id] else { f.lostAcks += 1; f.problems.append("acknowledged \(a.id) (seq \(a.seq)) missing"); continue }
            if e.seq != a.seq || e.version != a.version || e.event.stream != a.stream {
                f.problems.append("acknowledged \(a.id) at seq \(a.seq) v\(a.version) found at seq \(e.seq) v\(e.version)")
            }
        }
        for ids in report.intents {
            let present = ids.filter { byId[$0] != nil }.count
            if present != 0 && present != ids.count { f.problems.append("batch half visible: \(present) of \(ids.count)") }
        }
        for r in report.refused { for id in r.ids where byId[id] != nil { f.problems.append("refused \(id) (\(r.code)) is in the log") } }
        for c in report.conflicts where byId[c.id] != nil { f.problems.append("conflict loser \(c.id) is in the log") }
        // Per stream: versions 1, 2, 3 … in seq order.
        var versions: [String: UInt64] = [:]
        for e in events {
            let v = versions[e.event.stream, default: 0] + 1
            if e.version != v { f.problems.append("stream \(e.event.stream): version \(e.version) at seq \(e.seq), expected \(v)") }
            versions[e.event.stream] = v
        }
        for user in versions.keys where user != systemStream && (projectionsOf?.contains(user) ?? true) {
            let maintained = try await ledger.state(of: user, asOf: .max).state
            let replayed = try await ledger.state(of: user, asOf: .max, fromScratch: true).state
            if maintained != replayed { f.problems.append("projection of \(user) differs from a replay") }
        }
        return f
    }
}

extension Rig {
    /// A small valid history (10 events, two users and a policy, fixed ids) that the suites
    /// populate stores with. Event 2 carries a marker (`REQ-TAMPER-0001`) that only the event itself holds.
    static var baseFixturePath: String { fixtures("refused/input/_base.jsonl").path }
    static var baseFixture: String { (try? String(contentsOfFile: baseFixturePath, encoding: .utf8)) ?? "" }
}
