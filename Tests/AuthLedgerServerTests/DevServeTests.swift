import AsyncHTTPClient
@_spi(Storage) import AuthLedger
import Foundation
import NIOCore
import Testing

/// `authledger serve --dev` as the quick start runs it: the built binary, over HTTP.
@Suite(.serialized, .timeLimit(.minutes(2))) struct DevServeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var binary: String {
        for c in [".build/debug/authledger", ".build/x86_64-unknown-linux-gnu/debug/authledger", ".build/aarch64-unknown-linux-gnu/debug/authledger"] {
            let p = root.appendingPathComponent(c).path
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return root.appendingPathComponent(".build/debug/authledger").path
    }

    /// A running `serve --dev --port 0`, its stdout collected as it comes.
    final class DevServer: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var out = Data()
        var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }

        init(store: String) throws {
            process.executableURL = URL(fileURLWithPath: DevServeTests.binary)
            process.arguments = ["serve", "--dev", "--port", "0", "--store", store, "--log-level", "warning"]
            process.currentDirectoryURL = DevServeTests.root
            var env = ProcessInfo.processInfo.environment
            env.removeValue(forKey: "AUTHLEDGER_TOKENS")
            env.removeValue(forKey: "AUTHLEDGER_STORE")
            process.environment = env
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            let handle = pipe.fileHandleForReading
            Thread.detachNewThread { [self] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { return }
                    lock.withLock { out.append(chunk) }
                }
            }
        }

        /// The URL and token of the banner (bounded wait).
        func banner() async throws -> (url: String, token: String) {
            for _ in 0..<600 {
                let text = stdout
                if let line = text.split(separator: "\n").first(where: { $0.contains("export AUTHLEDGER_URL=") }) {
                    var url: String?, token: String?
                    for part in line.split(separator: " ") {
                        if part.hasPrefix("AUTHLEDGER_URL=") { url = String(part.dropFirst(15)) }
                        if part.hasPrefix("TOKEN=") { token = String(part.dropFirst(6)) }
                    }
                    if let url, let token { return (url, token) }
                }
                guard process.isRunning else { throw TestFailure("serve --dev exited: \(text)") }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw TestFailure("no banner from serve --dev: \(stdout)")
        }

        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
        }
    }

    static func get(_ client: HTTPClient, _ url: String, token: String) async throws -> (status: Int, json: JSON?) {
        var req = HTTPClientRequest(url: url)
        req.headers.add(name: "Authorization", value: "Bearer \(token)")
        let resp = try await client.execute(req, timeout: .seconds(30))
        let body = try await resp.body.collect(upTo: 16 << 20)
        return (Int(resp.status.code), try? JSON.parse(String(buffer: body)))
    }

    static func deviceIds(_ answer: JSON?) -> [String] {
        (answer?["devices"]?.arrayValue ?? []).compactMap { $0["deviceId"]?.stringValue }
    }

    @Test func onAnEmptyStoreItLoadsTheScenariosAndServesThem() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try DevServer(store: dir + "/store")
        defer { server.stop() }
        let (url, token) = try await server.banner()
        // It says which users it loaded
        let out = server.stdout
        for user in ["alice", "bob", "carol", "dave", "erin"] { #expect(out.contains("  \(user): "), "\(out)") }
        let client = TestServer.sharedClient
        do {
            // And serves alice's devices of scenario 01 (all revoked by its end) and bob's active ones
            let alice = try await Self.get(client, url + "/v1/users/alice/devices?includeRevoked=true", token: token)
            #expect(alice.status == 200)
            #expect(Self.deviceIds(alice.json).sorted() == ["iphone", "laptop", "tablet"], "\(String(describing: alice.json))")
            let bob = try await Self.get(client, url + "/v1/users/bob/devices", token: token)
            #expect(Self.deviceIds(bob.json).sorted() == ["desktop", "phone"], "\(String(describing: bob.json))")
            // And the whole recorded history is there
            let verify = try await Self.get(client, url + "/v1/verify", token: token)
            #expect((verify.json?["head"]?["seq"]?.intValue ?? 0) >= 45, "\(String(describing: verify.json))")
        }
    }

    @Test func aStoreWithEventsIsLeftAsItIs() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = dir + "/store"
        do {
            let ledger = try Ledger(path: store)
            let line = #"{"type":"device.registered","user":"zoe","at":"2026-03-01T08:00:00Z","data":{"deviceId":"phone","name":"Zoe phone","kind":"mobile","binding":"permanent","via":"initial"}}"#
            _ = try ledger.append(try EventDecoder.decodeLines(Array(line.utf8)).map(\.input))
        }
        let server = try DevServer(store: store)
        defer { server.stop() }
        let (url, token) = try await server.banner()
        #expect(!server.stdout.contains("loaded"), "\(server.stdout)")
        let client = TestServer.sharedClient
        do {
            let alice = try await Self.get(client, url + "/v1/users/alice/devices?includeRevoked=true", token: token)
            #expect(alice.status == 200 && Self.deviceIds(alice.json) == [], "\(String(describing: alice.json))")
            let zoe = try await Self.get(client, url + "/v1/users/zoe/devices", token: token)
            #expect(Self.deviceIds(zoe.json) == ["phone"])
            let verify = try await Self.get(client, url + "/v1/verify", token: token)
            #expect(verify.json?["head"]?["seq"]?.intValue == 1, "\(String(describing: verify.json))")
        }
    }
}
