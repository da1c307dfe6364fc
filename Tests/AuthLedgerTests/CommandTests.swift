import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Crypto
import Foundation
import AuthLedgerTestSupport
import Testing

/// A store and a movable clock for command tests.
final class Bench {
    let dir: String
    let ledger: Ledger
    var now = t("2026-05-01T10:00:00Z")

    init(_ storage: StorageKind = .lmdb) async throws {
        dir = Support.tempDir()
        // On PostgreSQL the directory keeps only the key files (the server key of OTPs).
        ledger = storage == .lmdb ? try await Ledger(lmdb: dir) : try await storage.open(storage.freshStore(), keys: dir)
    }

    @discardableResult
    func run(_ c: Command, actor: String? = nil, at: String? = nil) async throws -> CommandResult {
        if let at { now = t(at) }
        let n = now
        return try await ledger.perform(c, meta: actor.map { StringMap([("actor", $0)]) }, clock: { n })
    }

    func code(_ c: @autoclosure () throws -> Command, actor: String? = nil, at: String? = nil) async -> LedgerError? {
        let command: Command
        do { command = try c() } catch let e as LedgerError { return e } catch { return LedgerError(.storageError, "\(error)") }
        return await refusal { _ = try await run(command, actor: actor, at: at) }
    }

    func register(_ device: String, user: String = "alice", name: String? = nil, via: String? = nil, grant: String? = nil,
                  challenge: String? = nil, kind: String = "mobile", pushToken: String? = nil) throws -> Command {
        try .register(user: user, deviceId: device, name: name ?? "Device \(device)", kind: kind, platform: nil, appId: nil,
                  pushToken: pushToken, binding: "permanent", via: via, grantId: grant, challengeId: challenge)
    }

    func devices(_ user: String = "alice", includeRevoked: Bool = true) async throws -> [String: JSON] {
        let answer = try await ledger.devices(of: user, QueryOptions(asOf: now, includeRevoked: includeRevoked)).json
        var out: [String: JSON] = [:]
        for d in answer["devices"]!.arrayValue! { out[d["deviceId"]!.stringValue!] = d }
        return out
    }

    func lastEvents(_ n: Int) async throws -> [RecordedEvent] { Array(try await ledger.events().suffix(n)) }

    /// The OTP code sent for `user` (as the caller gets it), with its id.
    func sendOTP(_ user: String = "alice", at: String? = nil) async throws -> (otpId: String, code: String) {
        let r = try await run(.sendOTP(user: user, channel: "email", target: "alice@example.com"), at: at)
        return (r.otpId!, r.code!)
    }
}

@Suite struct CommandTests {
    // MARK: register and via inference

    @Test(arguments: StorageKind.all) func aFirstDeviceIsRegisteredViaInitialWithItsNameTrimmed(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let r = try await b.run(b.register("phone", name: "  My Phone  "))
        #expect(r.events.map(\.event.type) == [.registered])
        #expect(r.events[0].event.data.string(.via) == "initial")
        #expect(r.events[0].event.data.string(.name) == "My Phone")
        await #expect(try b.devices()["phone"]?["status"] == .string("active"))
        // No cooling after an initial registration
        #expect(try await b.ledger.cooling(of: "alice", QueryOptions(asOf: b.now)).json["active"] == .bool(false))
    }

    @Test(arguments: StorageKind.all) func aPendingDeviceIsRegisteredViaEmailLinkAndOpensCooling(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let rv = try await b.run(.requestVerification(user: "alice", deviceId: "laptop", name: " Work Laptop ", kind: "desktop", platform: "linux"), at: "2026-05-01T10:01:00Z")
        #expect(rv.events[0].event.data.string(.channel) == "email_link")
        #expect(rv.events[0].event.data.string(.name) == "Work Laptop")
        await #expect(try b.devices()["laptop"]?["status"] == .string("pending"))
        // A command-side request has a link: the device is registered by redeeming it (reference section 11)
        b.now = t("2026-05-01T10:02:00Z")
        let n = b.now
        let r = try await b.ledger.redeemLink(try LinkRedemptionRequest(token: try #require(rv.token)), clock: { n })
        #expect(r.events[0].event.data.string(.via) == "email_link")
        await #expect(try b.devices()["laptop"]?["status"] == .string("active"))
        let c = try await b.ledger.cooling(of: "alice", QueryOptions(asOf: b.now)).json
        #expect(c["until"] == .string("2026-05-01T10:07:00.000Z"))
    }

    @Test(arguments: StorageKind.all) func aSecondDeviceWithoutProofIsVerificationRequired(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        await #expect(b.code(try b.register("laptop"), at: "2026-05-01T10:01:00Z")?.code == .verificationRequired)
        await #expect(b.code(try b.register("laptop", via: "email_link"))?.code == .verificationRequired)
        #expect(try await b.ledger.head().seq == 1)
    }

    @Test(arguments: StorageKind.all) func registrationRefusals(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        await #expect(b.code(try b.register("phone", via: "admin"))?.code == .deviceExists)
        await #expect(b.code(try b.register("tablet", name: "ab", via: "admin"))?.code == .invalidName)
        await #expect(b.code(try b.register("tablet", via: "otp"))?.code == .invalidEvent)
        await #expect(b.code(try b.register("tablet", via: "admin", grant: "g1"))?.code == .invalidEvent)
        await #expect(b.code(try b.register("tablet", kind: "toaster"))?.code == .invalidEvent)
        await #expect(b.code(try b.register("tablet", grant: "g-unknown"))?.code == .grantInvalid)
        try await b.run(.requestVerification(user: "alice", deviceId: "tablet", name: nil, kind: nil, platform: nil))
        try await b.run(.revoke(user: "alice", deviceId: "tablet", reason: nil), at: "2026-05-01T10:01:00Z")
        await #expect(b.code(try b.register("tablet", via: "admin"), at: "2026-05-01T10:30:00Z")?.code == .deviceRevoked)
        // Cooling (opened by the revoke at 10:01) carries its end
        let e = await b.code(try b.register("laptop", via: "admin"), at: "2026-05-01T10:05:00Z")
        #expect(e?.code == .coolingPeriodActive)
        #expect(e?.until == t("2026-05-01T10:06:00Z"))
    }

    @Test(arguments: StorageKind.all) func theDeviceLimitCountsActiveDevices(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(.setPolicy(PolicySet(coolingSeconds: 0, maxDevices: 2)))
        try await b.run(b.register("a"))
        try await b.run(b.register("b", via: "admin"), at: "2026-05-01T10:01:00Z")
        await #expect(b.code(try b.register("c", via: "admin"), at: "2026-05-01T10:02:00Z")?.code == .deviceLimitReached)
        try await b.run(.revoke(user: "alice", deviceId: "b", reason: nil))
        try await b.run(b.register("c", via: "admin"), at: "2026-05-01T10:03:00Z")
        await #expect(try b.devices(includeRevoked: false).count == 2)
    }

    // MARK: trusted-device approval

    @Test(arguments: StorageKind.all) func aChallengeFromANewDeviceIsApprovedByATrustedDeviceAndRegistersIt(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let issued = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "laptop", action: "login", context: StringMap([("ip", "198.51.100.4")])), at: "2026-05-01T10:01:00Z")
        let cid = try #require(issued.challengeId)
        #expect(issued.events.map(\.event.type) == [.challengeIssued])
        #expect(issued.events[0].event.data.time(.expiresAt) == t("2026-05-01T10:02:00Z"))
        #expect(try await b.ledger.pending(of: "alice", QueryOptions(asOf: b.now)).json.arrayValue?.count == 1)
        // The requester cannot approve itself; a stranger neither
        await #expect(b.code(.approve(user: "alice", challengeId: cid, deviceId: "laptop", userVerified: nil))?.code == .approverNotTrusted)
        await #expect(b.code(.approve(user: "alice", challengeId: cid, deviceId: "ghost", userVerified: nil))?.code == .approverNotTrusted)
        let approved = try await b.run(.approve(user: "alice", challengeId: cid, deviceId: "phone", userVerified: true), actor: "device:phone", at: "2026-05-01T10:01:30Z")
        #expect(approved.events.map(\.event.type) == [.challengeApproved])
        await #expect(b.code(.deny(user: "alice", challengeId: cid, deviceId: "phone"))?.code == .challengeResolved)
        // Registration with --challenge infers trusted_device
        let reg = try await b.run(b.register("laptop", challenge: cid, kind: "desktop"), at: "2026-05-01T10:05:00Z")
        #expect(reg.events[0].event.data.string(.via) == "trusted_device")
        await #expect(try b.devices()["laptop"]?["via"] == .string("trusted_device"))
    }

    @Test(arguments: StorageKind.all) func aChallengeFromAnActiveDeviceIsApprovedAtOnceInOneAppend(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let r = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "phone", action: "transaction", context: nil), at: "2026-05-01T10:01:00Z")
        #expect(r.events.map(\.event.type) == [.challengeIssued, .challengeApproved])
        #expect(r.events[1].seq == r.events[0].seq + 1)
        #expect(r.events[1].event.data.string(.approverDeviceId) == "phone")
        let c = try await b.ledger.challenge(r.challengeId!, of: "alice", QueryOptions(asOf: b.now)).json
        #expect(c["status"] == .string("approved"))
    }

    @Test(arguments: StorageKind.all) func denialAndExpiryLookTheSameToTheRequester(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let c1 = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "x", action: "login", context: nil)).challengeId!
        let c2 = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "y", action: "login", context: nil)).challengeId!
        try await b.run(.deny(user: "alice", challengeId: c1, deviceId: "phone"), at: "2026-05-01T10:00:10Z")
        b.now = t("2026-05-01T10:01:00Z")
        await #expect(b.code(.approve(user: "alice", challengeId: c2, deviceId: "phone", userVerified: nil))?.code == .challengeExpired)
        await #expect(b.code(.approve(user: "alice", challengeId: "nope", deviceId: "phone", userVerified: nil))?.code == .challengeNotFound)
        for (cid, outcome) in [(c1, "denied"), (c2, "expired")] {
            let owner = try await b.ledger.challenge(cid, of: "alice", QueryOptions(asOf: b.now)).json
            let requester = try await b.ledger.challenge(cid, of: "alice", QueryOptions(asOf: b.now, asRequester: true)).json
            #expect(owner["outcome"] == .string(outcome))
            #expect(requester == .object([("challengeId", .string(cid)), ("status", .string("not_approved"))]))
        }
    }

    @Test(arguments: StorageKind.all) func theSweeperExpiresOnlyDueUnresolvedChallengesAsSystem(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let due = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "x", action: "login", context: nil)).challengeId!
        let later = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "y", action: "login", context: nil), at: "2026-05-01T10:00:30Z").challengeId!
        await #expect(b.code(.expireChallenge(user: "alice", challengeId: due))?.code == .challengeNotExpired)
        let swept = try await b.ledger.expireDueChallenges(now: t("2026-05-01T10:01:00Z"))
        #expect(swept.count == 1)
        #expect(swept.first?.event.data.string(.challengeId) == due)
        #expect(swept.first?.event.actor == "system")
        #expect(try await b.ledger.expireDueChallenges(now: t("2026-05-01T10:01:00Z")).isEmpty)
        await #expect(b.code(.expireChallenge(user: "alice", challengeId: due), at: "2026-05-01T10:02:00Z")?.code == .challengeResolved)
        let r = try await b.run(.expireChallenge(user: "alice", challengeId: later), at: "2026-05-01T10:02:00Z")
        #expect(r.events.map(\.event.type) == [.challengeExpired])
    }

    // MARK: rename, revoke, access, push

    @Test(arguments: StorageKind.all) func renameRules(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone", name: "My Phone"))
        await #expect(b.code(.rename(user: "alice", deviceId: "phone", name: " My Phone "))?.code == .nameUnchanged)
        await #expect(b.code(.rename(user: "alice", deviceId: "phone", name: "x"))?.code == .invalidName)
        await #expect(b.code(.rename(user: "alice", deviceId: "ghost", name: "Ghost Phone"))?.code == .deviceNotFound)
        let r = try await b.run(.rename(user: "alice", deviceId: "phone", name: "  Travel Phone "), at: "2026-05-01T10:01:00Z")
        #expect(r.events[0].event.data.string(.name) == "Travel Phone")
        let e = await b.code(.rename(user: "alice", deviceId: "phone", name: "Home Phone"), at: "2026-05-01T10:05:59.999Z")
        #expect(e?.code == .coolingPeriodActive && e?.until == t("2026-05-01T10:06:00Z"))
        try await b.run(.rename(user: "alice", deviceId: "phone", name: "Home Phone"), at: "2026-05-01T10:06:00Z")
        await #expect(try b.devices()["phone"]?["name"] == .string("Home Phone"))
    }

    @Test(arguments: StorageKind.all) func revokeRulesAndTheCallersSession(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        try await b.run(.requestVerification(user: "alice", deviceId: "laptop", name: nil, kind: nil, platform: nil))
        await #expect(b.code(.revoke(user: "alice", deviceId: "phone", reason: nil), actor: "device:phone")?.code == .currentDeviceProtected)
        await #expect(b.code(.revoke(user: "alice", deviceId: "ghost", reason: nil))?.code == .deviceNotFound)
        let r = try await b.run(.revoke(user: "alice", deviceId: "laptop", reason: "lost"), actor: "device:phone", at: "2026-05-01T10:01:00Z")
        #expect(r.sessionEnded == false)
        await #expect(b.code(.revoke(user: "alice", deviceId: "laptop", reason: nil), at: "2026-05-01T10:30:00Z")?.code == .deviceRevoked)
        // With protectCurrentDevice off, a device may revoke itself, which ends its session
        try await b.run(.setPolicy(PolicySet(protectCurrentDevice: false)))
        let own = try await b.run(.revoke(user: "alice", deviceId: "phone", reason: nil), actor: "device:phone")
        #expect(own.sessionEnded)
        #expect(own.json["sessionEnded"] == .bool(true))
    }

    @Test(arguments: StorageKind.all) func revokeAllRevokesPendingAndActiveDevicesAndEndsTheSession(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        try await b.run(.requestVerification(user: "alice", deviceId: "laptop", name: nil, kind: nil, platform: nil))
        let r = try await b.run(.revokeAll(user: "alice", reason: "stolen"), actor: "device:phone", at: "2026-05-01T10:01:00Z")
        #expect(r.sessionEnded)
        await #expect(try b.devices().values.allSatisfy { $0["status"] == .string("revoked") })
        await #expect(try b.devices(includeRevoked: false).isEmpty)
        await #expect(b.code(.revokeAll(user: "alice", reason: nil), at: "2026-05-01T10:02:00Z")?.code == .coolingPeriodActive)
    }

    @Test(arguments: StorageKind.all) func accessAndPushTokensNeedAnActiveDevice(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        try await b.run(.requestVerification(user: "alice", deviceId: "laptop", name: nil, kind: nil, platform: nil))
        try await b.run(.access(user: "alice", deviceId: "phone"), at: "2026-05-01T10:03:00Z")
        try await b.run(.updatePushToken(user: "alice", deviceId: "phone", pushToken: "tok-1"))
        let phone = try await b.devices()["phone"]!
        #expect(phone["lastAccessAt"] == .string("2026-05-01T10:03:00.000Z"))
        #expect(phone["pushEnrolled"] == .bool(true))
        await #expect(b.code(.access(user: "alice", deviceId: "laptop"))?.code == .deviceNotFound)
        await #expect(b.code(.updatePushToken(user: "alice", deviceId: "ghost", pushToken: "t"))?.code == .deviceNotFound)
        try await b.run(.revoke(user: "alice", deviceId: "laptop", reason: nil))
        await #expect(b.code(.access(user: "alice", deviceId: "laptop"))?.code == .deviceRevoked)
        await #expect(b.code(try .requestVerification(user: "alice", deviceId: "laptop", name: nil, kind: nil, platform: nil))?.code == .deviceRevoked)
        await #expect(b.code(try .requestVerification(user: "alice", deviceId: "phone", name: nil, kind: nil, platform: nil))?.code == .deviceExists)
    }

    @Test(arguments: StorageKind.all) func aCommandAtAnEarlierTimeThanTheStreamIsTimeRegression(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"), at: "2026-05-01T10:00:00Z")
        await #expect(b.code(.access(user: "alice", deviceId: "phone"), at: "2026-05-01T09:59:59Z")?.code == .timeRegression)
        await #expect(b.code(.access(user: "$system", deviceId: "phone"))?.code == .invalidEvent)
    }

}
