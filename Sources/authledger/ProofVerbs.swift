import ArgumentParser
import AuthLedger
import Foundation

/// `rotate-key USER DEVICE --public-key JWK --signature JWS`: replaces a device's key.
struct RotateKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rotate-key", abstract: "Replace an active device's key (signed by its old key over the new key's thumbprint).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var user: String
    @Argument var device: String
    @Option(name: .customLong("public-key"), help: "The new public JWK, as JSON.") var publicKey: String
    @Option(help: "The old key's compact JWS over the new key's RFC 7638 thumbprint.") var signature: String
    func run() async throws {
        try await CommandRunner(global: global, actor: actor).run(.rotateKey(user: user, deviceId: device, publicKey: try Command.publicKey(json: publicKey),
                                                                       signature: signature))
    }
}

/// `redeem-link [--] TOKEN` (`-` reads the token from standard input, so it stays out of
/// the process list and the shell history).
struct RedeemLink: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "redeem-link", abstract: "Register the device of a verification link (the token, or - to read it from stdin).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var actor: ActorOption
    @Argument var token: String
    @Option var name: String?
    @Option var kind: String?
    @Option var platform: String?
    @Option(name: .customLong("push-token")) var pushToken: String?
    @Option(name: .customLong("public-key"), help: "The device's public JWK, as JSON.") var publicKey: String?
    func run() async throws {
        try global.requireKeyFiles([.server], for: "redeem-link")
        var t = token
        if t == "-" {
            t = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            t = t.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let ledger = try await global.openLedger()
        let request = try LinkRedemptionRequest(token: t, name: name, kind: kind, platform: platform, pushToken: pushToken,
                                                publicKey: try publicKey.map { try Command.publicKey(json: $0) })
        let result = try await ledger.redeemLink(request, meta: try actor.meta(), clock: try global.clock())
        if global.json {
            Output.json(result.json)
        } else {
            for e in result.events { Output.line("appended seq \(e.seq) \(e.event.type.name)") }
            if let v = result.verificationId { Output.line("verification \(v)") }
        }
    }
}
