import ArgumentParser
import AuthLedger
import Foundation

/// Runs a command against the store and prints what it appended.
struct CommandRunner {
    let global: GlobalOptions
    let actor: ActorOption

    func run(_ command: Command) async throws {
        let ledger = try await global.openLedger()
        let result: CommandResult
        do {
            result = try await ledger.perform(command, meta: try actor.meta(), clock: try global.clock())
        } catch let e as LedgerError where e.appended != nil {
            // otp_invalid: what it appended is printed as for any command, then the refusal.
            var partial = CommandResult()
            partial.events = e.appended ?? []
            print(partial)
            throw e
        }
        print(result)
    }

    private func print(_ result: CommandResult) {
        if global.json {
            Output.json(result.json)
        } else {
            for e in result.events { Output.line("appended seq \(e.seq) \(e.event.type.name)") }
            if let c = result.challengeId { Output.line("challenge \(c)") }
            if let o = result.otpId { Output.line("otp \(o)") }
            if let code = result.code { Output.line("code \(code)") }
            if let g = result.grantId { Output.line("grant \(g)") }
            if let v = result.verificationId { Output.line("verification \(v)") }
            if let t = result.token { Output.line("token \(t)") }
            if result.sessionEnded { Output.line("session ended") }
        }
    }
}

struct RequestVerification: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "request-verification", abstract: "An unrecognised device signed in and must be verified (email link).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var device: String
    @Option var name: String?
    @Option var kind: String?
    @Option var platform: String?
    func run() async throws {
        // The link token's keyed hash is made with the server key.
        try global.requireKeyFiles([.server], for: "request-verification")
        try await CommandRunner(global: global, actor: actor).run(.requestVerification(user: user, deviceId: device, name: name, kind: kind, platform: platform))
    }
}

struct Register: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Register a device (via inferred: otp with --grant, trusted_device with --challenge, email_link when pending, else initial).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var device: String
    @Option var name: String
    @Option var kind = Command.Default.kind.rawValue
    @Option var platform: String?
    @Option(name: .customLong("app-id")) var appId: String?
    @Option(name: .customLong("push-token")) var pushToken: String?
    @Option var binding = Command.Default.binding.rawValue
    @Option var via: String?
    @Option var grant: String?
    @Option var challenge: String?
    @Option(name: .customLong("public-key"), help: "The device's public JWK (EC P-256 or OKP Ed25519), as JSON.") var publicKey: String?
    func run() async throws {
        try await CommandRunner(global: global, actor: actor).run(.register(
            user: user, deviceId: device, name: name, kind: kind, platform: platform, appId: appId, pushToken: pushToken,
            binding: binding, via: via, grantId: grant, challengeId: challenge,
            publicKey: try publicKey.map { try Command.publicKey(json: $0) }))
    }
}

struct Rename: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rename an active device.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var device: String
    @Argument var name: String
    func run() async throws { try await CommandRunner(global: global, actor: actor).run(.rename(user: user, deviceId: device, name: name)) }
}

struct Revoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Revoke a pending or active device.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var device: String
    @Option var reason: String?
    func run() async throws { try await CommandRunner(global: global, actor: actor).run(.revoke(user: user, deviceId: device, reason: reason)) }
}

struct RevokeAll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "revoke-all", abstract: "Revoke every pending and active device of a user.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Option var reason: String?
    func run() async throws { try await CommandRunner(global: global, actor: actor).run(.revokeAll(user: user, reason: reason)) }
}

struct Access: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Record that an active device was used.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var device: String
    func run() async throws { try await CommandRunner(global: global, actor: actor).run(.access(user: user, deviceId: device)) }
}

struct UpdatePushToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "update-push-token", abstract: "Enroll or refresh an active device's push token.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var device: String
    @Argument var token: String
    func run() async throws { try await CommandRunner(global: global, actor: actor).run(.updatePushToken(user: user, deviceId: device, pushToken: token)) }
}

struct IssueChallenge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "issue-challenge", abstract: "Ask the user's trusted devices to approve an action.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Option(help: "The requesting device.") var device: String
    @Option var action = Command.Default.action
    @Option(help: "Context as key=value (ip, location, app, bindingMessage); repeatable.") var context: [String] = []
    func run() async throws {
        var ctx: StringMap?
        if !context.isEmpty {
            ctx = StringMap(try context.map { kv in
                guard let eq = kv.firstIndex(of: "=") else { throw ValidationError("--context takes key=value") }
                return (String(kv[..<eq]), String(kv[kv.index(after: eq)...]))
            })
        }
        try await CommandRunner(global: global, actor: actor).run(.issueChallenge(user: user, requestingDeviceId: device, action: action, context: ctx))
    }
}

struct Approve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Approve a pending challenge from a trusted device.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var challenge: String
    @Option var device: String
    @Flag(name: .customLong("user-verified")) var userVerified = false
    @Option(help: "The device's compact JWS over its answer.") var signature: String?
    func run() async throws {
        try await CommandRunner(global: global, actor: actor).run(.approve(user: user, challengeId: challenge, deviceId: device, userVerified: userVerified ? true : nil,
                                                                     signature: signature))
    }
}

struct Deny: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Deny a pending challenge from a trusted device.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var challenge: String
    @Option var device: String
    @Option(help: "The device's compact JWS over its answer.") var signature: String?
    func run() async throws { try await CommandRunner(global: global, actor: actor).run(.deny(user: user, challengeId: challenge, deviceId: device, signature: signature)) }
}

struct ExpireChallenges: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "expire-challenges", abstract: "Append challenge.expired for every challenge past expiresAt (what the server's sweeper does).")
    @OptionGroup var global: GlobalOptions
    func run() async throws {
        let events = try await global.openLedger().expireDueChallenges(now: try global.fixedNow() ?? Timestamp.now())
        if global.json {
            Output.json(.object([("events", .array(events.map { .object([("seq", .int(Int64($0.seq))), ("type", .string($0.event.type.name))]) }))]))
        } else {
            for e in events { Output.line("appended seq \(e.seq) \(e.event.type.name)") }
        }
    }
}

struct SendOTP: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "send-otp", abstract: "Issue a one-time code (printed once; only its HMAC is stored).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Option var channel: String
    @Option var target: String
    func run() async throws {
        try global.requireKeyFiles([.server], for: "send-otp")
        try await CommandRunner(global: global, actor: actor).run(.sendOTP(user: user, channel: channel, target: target))
    }
}

struct VerifyOTP: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "verify-otp", abstract: "Verify a one-time code; prints the single-use grant id.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var otp: String
    @Argument var code: String
    func run() async throws {
        try global.requireKeyFiles([.server], for: "verify-otp")
        try await CommandRunner(global: global, actor: actor).run(.verifyOTP(user: user, otpId: otp, code: code))
    }
}

struct SetPolicy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set-policy", abstract: "Append policy.set with the given settings.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Option(name: .customLong("cooling-seconds")) var coolingSeconds: Int64?
    @Option(name: .customLong("challenge-ttl-seconds")) var challengeTtlSeconds: Int64?
    @Option(name: .customLong("otp-ttl-seconds")) var otpTtlSeconds: Int64?
    @Option(name: .customLong("otp-max-attempts")) var otpMaxAttempts: Int64?
    @Option(name: .customLong("otp-per-hour")) var otpPerHour: Int64?
    @Option(name: .customLong("grant-ttl-seconds")) var grantTtlSeconds: Int64?
    @Option(name: .customLong("max-devices")) var maxDevices: Int64?
    @Option(name: .customLong("protect-current-device")) var protectCurrentDevice: Bool?
    @Option(name: .customLong("require-signed-approvals")) var requireSignedApprovals: Bool?
    @Option(name: .customLong("verification-link-ttl-seconds")) var verificationLinkTtlSeconds: Int64?

    func run() async throws {
        var members: [(String, JSON)] = []
        let ints: [(String, Int64?)] = [("coolingSeconds", coolingSeconds), ("challengeTtlSeconds", challengeTtlSeconds),
                                        ("otpTtlSeconds", otpTtlSeconds), ("otpMaxAttempts", otpMaxAttempts), ("otpPerHour", otpPerHour),
                                        ("grantTtlSeconds", grantTtlSeconds), ("maxDevices", maxDevices),
                                        ("verificationLinkTtlSeconds", verificationLinkTtlSeconds)]
        for (k, v) in ints { if let v { members.append((k, .int(v))) } }
        if let protectCurrentDevice { members.append(("protectCurrentDevice", .bool(protectCurrentDevice))) }
        if let requireSignedApprovals { members.append(("requireSignedApprovals", .bool(requireSignedApprovals))) }
        // Nothing to set is a usage error (exit 2), like a missing argument.
        guard !members.isEmpty else { throw ValidationError("name at least one setting, e.g. --cooling-seconds N") }
        let data = try EventDecoder.decodeData(.object(members), type: .policySet)
        try await CommandRunner(global: global, actor: actor).run(.setPolicy(PolicySet(data)))
    }
}
