import Foundation

/// One `authledger serve` of this build as a child process, one of its output streams
/// collected as it comes, waited on by bounded polls. The suites that run the CLI's
/// server (DevServeTests, MultiServerPostgresTests) start theirs through it.
final class ServeChild: @unchecked Sendable {
    enum Output { case stdout, stderr }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The built `authledger` (tools/test builds it with `swift build --build-tests`).
    static var binary: String {
        for c in [".build/debug/authledger", ".build/x86_64-unknown-linux-gnu/debug/authledger", ".build/aarch64-unknown-linux-gnu/debug/authledger"] {
            let p = root.appendingPathComponent(c).path
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return root.appendingPathComponent(".build/debug/authledger").path
    }

    let process = Process()
    private let lock = NSLock()
    private var collected = Data()

    /// What the child printed on the collected stream so far.
    var output: String { lock.withLock { String(decoding: collected, as: UTF8.self) } }

    /// Starts `authledger ARGUMENTS` in the package root; `environment` sets (or, with nil,
    /// removes) variables of this process's environment; the other stream is discarded.
    init(_ arguments: [String], environment: [String: String?] = [:], collect: Output) throws {
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        process.currentDirectoryURL = Self.root
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = collect == .stdout ? pipe : FileHandle.nullDevice
        process.standardError = collect == .stderr ? pipe : FileHandle.nullDevice
        try process.run()
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                lock.withLock { collected.append(chunk) }
            }
        }
    }

    /// Waits (bounded: `attempts` × 100 ms) until `found` finds `what` in the output so far;
    /// throws when the child exits first or never prints it.
    func waitFor<T>(_ what: String, attempts: Int = 600, _ found: (String) -> T?) async throws -> T {
        for _ in 0..<attempts {
            let text = output
            if let value = found(text) { return value }
            guard process.isRunning else { throw TestFailure("serve exited before \(what): \(Self.redacted(text))") }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("no \(what) from serve: \(Self.redacted(output))")
    }

    /// The base URL from the "listening … port=N" log line (needs `--log-level info` and stderr collected).
    func listening(attempts: Int = 600) async throws -> String {
        try await waitFor("listening line", attempts: attempts) { text in
            guard let line = text.split(separator: "\n").first(where: { $0.contains("listening") && $0.contains("port=") }),
                  let r = line.range(of: "port="), let port = Int(line[r.upperBound...].prefix(while: \.isNumber)) else { return nil }
            return "http://127.0.0.1:\(port)"
        }
    }

    /// Never prints a password of a database URL.
    static func redacted(_ s: String) -> String {
        s.replacingOccurrences(of: #"://[^:@/\s]*:[^@\s]*@"#, with: "://***@", options: .regularExpression)
    }

    /// `kill -9`: no shutdown, no flush, connections cut by the kernel.
    func killHard() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// SIGINT (a graceful stop without SIGTERM's drain of `--drain-seconds`), then waits for the exit.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGINT) }
        process.waitUntilExit()
    }
}
