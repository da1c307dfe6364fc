import AsyncHTTPClient
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import NIOCore
import Testing

/// `authledger serve --dev` as the quick start runs it: the built binary, over HTTP.
@Suite(.serialized, .timeLimit(.minutes(2))) struct DevServeTests {
    /// `serve --dev --port 0` on `store`, its stdout (the banner) collected.
    static func devServer(store: String) throws -> ServeChild {
        try ServeChild(["serve", "--dev", "--port", "0", "--store", store, "--log-level", "warning"],
                       environment: ["AUTHLEDGER_TOKENS": nil, "AUTHLEDGER_STORE": nil], collect: .stdout)
    }

    /// The URL and token of the banner (bounded wait).
    static func banner(_ server: ServeChild) async throws -> (url: String, token: String) {
        try await server.waitFor("banner") { text in
            guard let line = text.split(separator: "\n").first(where: { $0.contains("export AUTHLEDGER_URL=") }) else { return nil }
            var url: String?, token: String?
            for part in line.split(separator: " ") {
                if part.hasPrefix("AUTHLEDGER_URL=") { url = String(part.dropFirst(15)) }
                if part.hasPrefix("TOKEN=") { token = String(part.dropFirst(6)) }
            }
            guard let url, let token else { return nil }
            return (url, token)
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
        let server = try Self.devServer(store: dir + "/store")
        defer { server.stop() }
        let (url, token) = try await Self.banner(server)
        // It says which users it loaded
        let out = server.output
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
            let ledger = try await Ledger(lmdb: store)
            let line = #"{"type":"device.registered","user":"zoe","at":"2026-03-01T08:00:00Z","data":{"deviceId":"phone","name":"Zoe phone","kind":"mobile","binding":"permanent","via":"initial"}}"#
            _ = try await ledger.append(try EventDecoder.decodeLines(Array(line.utf8)).map(\.input))
        }
        let server = try Self.devServer(store: store)
        defer { server.stop() }
        let (url, token) = try await Self.banner(server)
        #expect(!server.output.contains("loaded"), "\(server.output)")
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
