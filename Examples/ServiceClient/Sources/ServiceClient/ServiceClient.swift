// A login service on another host: it registers a user's first phone, then a new laptop asks
// to sign in and waits for the phone's approval while a push sender follows the event feed.
//
//   AUTHLEDGER_URL=http://127.0.0.1:8080 TOKEN=… swift run --package-path Examples/ServiceClient
import AuthLedgerClient
import AuthLedgerCore
import Foundation

@main
struct ServiceClient {
    static func main() async {
        let env = ProcessInfo.processInfo.environment
        guard let url = env["AUTHLEDGER_URL"], let token = env["TOKEN"] else {
            FileHandle.standardError.write(Data("set AUTHLEDGER_URL and TOKEN (authledger serve --dev prints both)\n".utf8))
            exit(2)
        }
        do {
            try await run(AuthLedgerClient(baseURL: url, token: token))
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ client: AuthLedgerClient) async throws {
        let user = "example-\(UUID().uuidString.prefix(8).lowercased())"
        let registered = try await client.perform(.register(user: user, deviceId: "phone", name: "Example Phone", kind: "mobile", platform: "ios"))
        let first = registered.events[0].seq
        print("registered \(user)'s phone at seq \(first)")

        // The push sender: the feed from the registration on, the challenge it must push.
        let pushes = Task { try await firstChallenge(client, user: user, from: first) }

        // The laptop asks; the phone approves a moment later; the laptop waits for the answer.
        let asked = try await client.perform(.issueChallenge(ChallengeRequest(user: user, requestingDeviceId: "laptop",
                                                                              context: StringMap([("ip", "203.0.113.7")]))))
        let challengeId = asked.challengeId ?? ""
        print("push sender saw challenge \(try await pushes.value)")
        let phone = Task {
            try await Task.sleep(for: .milliseconds(300))
            try await client.perform(.approve(Approval(user: user, challengeId: challengeId, deviceId: "phone")), actor: "device:phone")
        }
        let answer = try await client.awaitAnswer(user: user, challenge: challengeId, timeout: .seconds(10))
        _ = try await phone.value
        print("the laptop's challenge is \(answer.status)")

        // Trusted by the approval, the laptop is registered.
        try await client.perform(.register(user: user, deviceId: "laptop", name: "Example Laptop", challengeId: challengeId))
        let devices = try await client.devices(of: user)
        print("devices: " + devices.devices.map { "\($0.deviceId) (\($0.status.name), via \($0.via ?? "-"))" }.joined(separator: ", "))

        // A refusal is typed: an unknown device cannot be renamed.
        print(await refusal(client, user: user))
    }

    /// The first `challenge.issued` of `user` on the feed from `from`.
    static func firstChallenge(_ client: AuthLedgerClient, user: String, from: UInt64) async throws -> String {
        for try await e in client.events(from: from, user: user, types: [.challengeIssued]) {
            return e.event.data.json["challengeId"]?.stringValue ?? "?"
        }
        return "none"
    }

    static func refusal(_ client: AuthLedgerClient, user: String) async -> String {
        do {
            try await client.perform(.rename(Rename(user: user, deviceId: "tablet", name: "Nobody's Tablet")))
            return "the rename was accepted"
        } catch {
            return "refused as expected: \(error.code?.rawValue ?? "?") (\(error))"
        }
    }
}
