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

    init(_ storage: StorageKind = .lmdb) throws {
        dir = Support.tempDir()
        // On PostgreSQL the directory keeps only the key files (the server key of OTPs).
        ledger = storage == .lmdb ? try Ledger(lmdb: dir) : try storage.open(storage.freshStore(), keys: dir)
    }

    @discardableResult
    func run(_ c: Command, actor: String? = nil, at: String? = nil) throws -> CommandResult {
        if let at { now = t(at) }
        let n = now
        return try ledger.performBlocking(c, meta: actor.map { StringMap([("actor", $0)]) }, clock: { n })
    }

    func code(_ c: @autoclosure () throws -> Command, actor: String? = nil, at: String? = nil) -> LedgerError? {
        refusal { try run(c(), actor: actor, at: at) }
    }

    func register(_ device: String, user: String = "alice", name: String? = nil, via: String? = nil, grant: String? = nil,
                  challenge: String? = nil, kind: String = "mobile", pushToken: String? = nil) throws -> Command {
        try .register(user: user, deviceId: device, name: name ?? "Device \(device)", kind: kind, platform: nil, appId: nil,
                  pushToken: pushToken, binding: "permanent", via: via, grantId: grant, challengeId: challenge)
    }

    func devices(_ user: String = "alice", includeRevoked: Bool = true) throws -> [String: JSON] {
        let answer = try ledger.devices(user, QueryOptions(asOf: now, includeRevoked: includeRevoked))
        var out: [String: JSON] = [:]
        for d in answer["devices"]!.arrayValue! { out[d["deviceId"]!.stringValue!] = d }
        return out
    }

    func lastEvents(_ n: Int) throws -> [RecordedEvent] { Array(try ledger.events().suffix(n)) }

    /// The OTP code sent for `user` (as the caller gets it), with its id.
    func sendOTP(_ user: String = "alice", at: String? = nil) throws -> (otpId: String, code: String) {
        let r = try run(.sendOTP(user: user, channel: "email", target: "alice@example.com"), at: at)
        return (r.otpId!, r.code!)
    }
}

@Suite struct CommandTests {
    // MARK: register and via inference

    @Test(arguments: StorageKind.all) func aFirstDeviceIsRegisteredViaInitialWithItsNameTrimmed(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        let r = try b.run(b.register("phone", name: "  My Phone  "))
        #expect(r.events.map(\.event.type) == [.registered])
        #expect(r.events[0].event.data.string(.via) == "initial")
        #expect(r.events[0].event.data.string(.name) == "My Phone")
        #expect(try b.devices()["phone"]?["status"] == .string("active"))
        // No cooling after an initial registration
        #expect(try b.ledger.cooling("alice", QueryOptions(asOf: b.now))["active"] == .bool(false))
    }

    @Test(arguments: StorageKind.all) func aPendingDeviceIsRegisteredViaEmailLinkAndOpensCooling(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        let rv = try b.run(.requestVerification(user: "alice", deviceId: "laptop", name: " Work Laptop ", kind: "desktop", platform: "linux"), at: "2026-05-01T10:01:00Z")
        #expect(rv.events[0].event.data.string(.channel) == "email_link")
        #expect(rv.events[0].event.data.string(.name) == "Work Laptop")
        #expect(try b.devices()["laptop"]?["status"] == .string("pending"))
        // A command-side request has a link: the device is registered by redeeming it (reference section 11)
        b.now = t("2026-05-01T10:02:00Z")
        let n = b.now
        let r = try b.ledger.redeemLinkBlocking(try LinkRedemptionRequest(token: try #require(rv.token)), clock: { n })
        #expect(r.events[0].event.data.string(.via) == "email_link")
        #expect(try b.devices()["laptop"]?["status"] == .string("active"))
        let c = try b.ledger.cooling("alice", QueryOptions(asOf: b.now))
        #expect(c["until"] == .string("2026-05-01T10:07:00.000Z"))
    }

    @Test(arguments: StorageKind.all) func aSecondDeviceWithoutProofIsVerificationRequired(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        #expect(b.code(try b.register("laptop"), at: "2026-05-01T10:01:00Z")?.code == .verificationRequired)
        #expect(b.code(try b.register("laptop", via: "email_link"))?.code == .verificationRequired)
        #expect(try b.ledger.head().seq == 1)
    }

    @Test(arguments: StorageKind.all) func registrationRefusals(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        #expect(b.code(try b.register("phone", via: "admin"))?.code == .deviceExists)
        #expect(b.code(try b.register("tablet", name: "ab", via: "admin"))?.code == .invalidName)
        #expect(b.code(try b.register("tablet", via: "otp"))?.code == .invalidEvent)
        #expect(b.code(try b.register("tablet", via: "admin", grant: "g1"))?.code == .invalidEvent)
        #expect(b.code(try b.register("tablet", kind: "toaster"))?.code == .invalidEvent)
        #expect(b.code(try b.register("tablet", grant: "g-unknown"))?.code == .grantInvalid)
        try b.run(.requestVerification(user: "alice", deviceId: "tablet", name: nil, kind: nil, platform: nil))
        try b.run(.revoke(user: "alice", deviceId: "tablet", reason: nil), at: "2026-05-01T10:01:00Z")
        #expect(b.code(try b.register("tablet", via: "admin"), at: "2026-05-01T10:30:00Z")?.code == .deviceRevoked)
        // Cooling (opened by the revoke at 10:01) carries its end
        let e = b.code(try b.register("laptop", via: "admin"), at: "2026-05-01T10:05:00Z")
        #expect(e?.code == .coolingPeriodActive)
        #expect(e?.until == t("2026-05-01T10:06:00Z"))
    }

    @Test(arguments: StorageKind.all) func theDeviceLimitCountsActiveDevices(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(.setPolicy(PolicySet(coolingSeconds: 0, maxDevices: 2)))
        try b.run(b.register("a"))
        try b.run(b.register("b", via: "admin"), at: "2026-05-01T10:01:00Z")
        #expect(b.code(try b.register("c", via: "admin"), at: "2026-05-01T10:02:00Z")?.code == .deviceLimitReached)
        try b.run(.revoke(user: "alice", deviceId: "b", reason: nil))
        try b.run(b.register("c", via: "admin"), at: "2026-05-01T10:03:00Z")
        #expect(try b.devices(includeRevoked: false).count == 2)
    }

    // MARK: trusted-device approval

    @Test(arguments: StorageKind.all) func aChallengeFromANewDeviceIsApprovedByATrustedDeviceAndRegistersIt(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        let issued = try b.run(.issueChallenge(user: "alice", requestingDeviceId: "laptop", action: "login", context: StringMap([("ip", "198.51.100.4")])), at: "2026-05-01T10:01:00Z")
        let cid = try #require(issued.challengeId)
        #expect(issued.events.map(\.event.type) == [.challengeIssued])
        #expect(issued.events[0].event.data.time(.expiresAt) == t("2026-05-01T10:02:00Z"))
        #expect(try b.ledger.pending("alice", QueryOptions(asOf: b.now)).arrayValue?.count == 1)
        // The requester cannot approve itself; a stranger neither
        #expect(b.code(.approve(user: "alice", challengeId: cid, deviceId: "laptop", userVerified: nil))?.code == .approverNotTrusted)
        #expect(b.code(.approve(user: "alice", challengeId: cid, deviceId: "ghost", userVerified: nil))?.code == .approverNotTrusted)
        let approved = try b.run(.approve(user: "alice", challengeId: cid, deviceId: "phone", userVerified: true), actor: "device:phone", at: "2026-05-01T10:01:30Z")
        #expect(approved.events.map(\.event.type) == [.challengeApproved])
        #expect(b.code(.deny(user: "alice", challengeId: cid, deviceId: "phone"))?.code == .challengeResolved)
        // Registration with --challenge infers trusted_device
        let reg = try b.run(b.register("laptop", challenge: cid, kind: "desktop"), at: "2026-05-01T10:05:00Z")
        #expect(reg.events[0].event.data.string(.via) == "trusted_device")
        #expect(try b.devices()["laptop"]?["via"] == .string("trusted_device"))
    }

    @Test(arguments: StorageKind.all) func aChallengeFromAnActiveDeviceIsApprovedAtOnceInOneAppend(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        let r = try b.run(.issueChallenge(user: "alice", requestingDeviceId: "phone", action: "transaction", context: nil), at: "2026-05-01T10:01:00Z")
        #expect(r.events.map(\.event.type) == [.challengeIssued, .challengeApproved])
        #expect(r.events[1].seq == r.events[0].seq + 1)
        #expect(r.events[1].event.data.string(.approverDeviceId) == "phone")
        let c = try b.ledger.challenge("alice", r.challengeId!, QueryOptions(asOf: b.now))
        #expect(c["status"] == .string("approved"))
    }

    @Test(arguments: StorageKind.all) func denialAndExpiryLookTheSameToTheRequester(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        let c1 = try b.run(.issueChallenge(user: "alice", requestingDeviceId: "x", action: "login", context: nil)).challengeId!
        let c2 = try b.run(.issueChallenge(user: "alice", requestingDeviceId: "y", action: "login", context: nil)).challengeId!
        try b.run(.deny(user: "alice", challengeId: c1, deviceId: "phone"), at: "2026-05-01T10:00:10Z")
        b.now = t("2026-05-01T10:01:00Z")
        #expect(b.code(.approve(user: "alice", challengeId: c2, deviceId: "phone", userVerified: nil))?.code == .challengeExpired)
        #expect(b.code(.approve(user: "alice", challengeId: "nope", deviceId: "phone", userVerified: nil))?.code == .challengeNotFound)
        for (cid, outcome) in [(c1, "denied"), (c2, "expired")] {
            let owner = try b.ledger.challenge("alice", cid, QueryOptions(asOf: b.now))
            let requester = try b.ledger.challenge("alice", cid, QueryOptions(asOf: b.now, asRequester: true))
            #expect(owner["outcome"] == .string(outcome))
            #expect(requester == .object([("challengeId", .string(cid)), ("status", .string("not_approved"))]))
        }
    }

    @Test(arguments: StorageKind.all) func theSweeperExpiresOnlyDueUnresolvedChallengesAsSystem(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        let due = try b.run(.issueChallenge(user: "alice", requestingDeviceId: "x", action: "login", context: nil)).challengeId!
        let later = try b.run(.issueChallenge(user: "alice", requestingDeviceId: "y", action: "login", context: nil), at: "2026-05-01T10:00:30Z").challengeId!
        #expect(b.code(.expireChallenge(user: "alice", challengeId: due))?.code == .challengeNotExpired)
        let swept = try b.ledger.expireDueChallengesBlocking(now: t("2026-05-01T10:01:00Z"))
        #expect(swept.count == 1)
        #expect(swept.first?.event.data.string(.challengeId) == due)
        #expect(swept.first?.event.actor == "system")
        #expect(try b.ledger.expireDueChallengesBlocking(now: t("2026-05-01T10:01:00Z")).isEmpty)
        #expect(b.code(.expireChallenge(user: "alice", challengeId: due), at: "2026-05-01T10:02:00Z")?.code == .challengeResolved)
        let r = try b.run(.expireChallenge(user: "alice", challengeId: later), at: "2026-05-01T10:02:00Z")
        #expect(r.events.map(\.event.type) == [.challengeExpired])
    }

    // MARK: rename, revoke, access, push

    @Test(arguments: StorageKind.all) func renameRules(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone", name: "My Phone"))
        #expect(b.code(.rename(user: "alice", deviceId: "phone", name: " My Phone "))?.code == .nameUnchanged)
        #expect(b.code(.rename(user: "alice", deviceId: "phone", name: "x"))?.code == .invalidName)
        #expect(b.code(.rename(user: "alice", deviceId: "ghost", name: "Ghost Phone"))?.code == .deviceNotFound)
        let r = try b.run(.rename(user: "alice", deviceId: "phone", name: "  Travel Phone "), at: "2026-05-01T10:01:00Z")
        #expect(r.events[0].event.data.string(.name) == "Travel Phone")
        let e = b.code(.rename(user: "alice", deviceId: "phone", name: "Home Phone"), at: "2026-05-01T10:05:59.999Z")
        #expect(e?.code == .coolingPeriodActive && e?.until == t("2026-05-01T10:06:00Z"))
        try b.run(.rename(user: "alice", deviceId: "phone", name: "Home Phone"), at: "2026-05-01T10:06:00Z")
        #expect(try b.devices()["phone"]?["name"] == .string("Home Phone"))
    }

    @Test(arguments: StorageKind.all) func revokeRulesAndTheCallersSession(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        try b.run(.requestVerification(user: "alice", deviceId: "laptop", name: nil, kind: nil, platform: nil))
        #expect(b.code(.revoke(user: "alice", deviceId: "phone", reason: nil), actor: "device:phone")?.code == .currentDeviceProtected)
        #expect(b.code(.revoke(user: "alice", deviceId: "ghost", reason: nil))?.code == .deviceNotFound)
        let r = try b.run(.revoke(user: "alice", deviceId: "laptop", reason: "lost"), actor: "device:phone", at: "2026-05-01T10:01:00Z")
        #expect(r.sessionEnded == false)
        #expect(b.code(.revoke(user: "alice", deviceId: "laptop", reason: nil), at: "2026-05-01T10:30:00Z")?.code == .deviceRevoked)
        // With protectCurrentDevice off, a device may revoke itself, which ends its session
        try b.run(.setPolicy(PolicySet(protectCurrentDevice: false)))
        let own = try b.run(.revoke(user: "alice", deviceId: "phone", reason: nil), actor: "device:phone")
        #expect(own.sessionEnded)
        #expect(own.json["sessionEnded"] == .bool(true))
    }

    @Test(arguments: StorageKind.all) func revokeAllRevokesPendingAndActiveDevicesAndEndsTheSession(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        try b.run(.requestVerification(user: "alice", deviceId: "laptop", name: nil, kind: nil, platform: nil))
        let r = try b.run(.revokeAll(user: "alice", reason: "stolen"), actor: "device:phone", at: "2026-05-01T10:01:00Z")
        #expect(r.sessionEnded)
        #expect(try b.devices().values.allSatisfy { $0["status"] == .string("revoked") })
        #expect(try b.devices(includeRevoked: false).isEmpty)
        #expect(b.code(.revokeAll(user: "alice", reason: nil), at: "2026-05-01T10:02:00Z")?.code == .coolingPeriodActive)
    }

    @Test(arguments: StorageKind.all) func accessAndPushTokensNeedAnActiveDevice(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        try b.run(.requestVerification(user: "alice", deviceId: "laptop", name: nil, kind: nil, platform: nil))
        try b.run(.access(user: "alice", deviceId: "phone"), at: "2026-05-01T10:03:00Z")
        try b.run(.updatePushToken(user: "alice", deviceId: "phone", pushToken: "tok-1"))
        let phone = try b.devices()["phone"]!
        #expect(phone["lastAccessAt"] == .string("2026-05-01T10:03:00.000Z"))
        #expect(phone["pushEnrolled"] == .bool(true))
        #expect(b.code(.access(user: "alice", deviceId: "laptop"))?.code == .deviceNotFound)
        #expect(b.code(.updatePushToken(user: "alice", deviceId: "ghost", pushToken: "t"))?.code == .deviceNotFound)
        try b.run(.revoke(user: "alice", deviceId: "laptop", reason: nil))
        #expect(b.code(.access(user: "alice", deviceId: "laptop"))?.code == .deviceRevoked)
        #expect(b.code(try .requestVerification(user: "alice", deviceId: "laptop", name: nil, kind: nil, platform: nil))?.code == .deviceRevoked)
        #expect(b.code(try .requestVerification(user: "alice", deviceId: "phone", name: nil, kind: nil, platform: nil))?.code == .deviceExists)
    }

    @Test(arguments: StorageKind.all) func aCommandAtAnEarlierTimeThanTheStreamIsTimeRegression(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"), at: "2026-05-01T10:00:00Z")
        #expect(b.code(.access(user: "alice", deviceId: "phone"), at: "2026-05-01T09:59:59Z")?.code == .timeRegression)
        #expect(b.code(.access(user: "$system", deviceId: "phone"))?.code == .invalidEvent)
    }

    // MARK: OTP

    @Test(arguments: StorageKind.all) func sendOTPReturnsSixDigitsAndRecordsOnlyAKeyedHashAndAMaskedTarget(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        let r = try b.run(.sendOTP(user: "alice", channel: "email", target: "alice@example.com"))
        let code = try #require(r.code)
        #expect(code.count == 6 && code.allSatisfy(\.isASCII) && code.allSatisfy(\.isNumber))
        let data = r.events[0].event.data
        #expect(data.string(.target) == "a***@example.com")
        #expect(data.int(.maxAttempts) == 5)
        #expect(data.time(.expiresAt) == t("2026-05-01T10:05:00Z"))
        let hash = try #require(data.string(.codeHash))
        #expect(hash.count == 64 && hash.allSatisfy { "0123456789abcdef".contains($0) })
        // HMAC-SHA-256 under the server key kept beside the log (0600), not a plain hash
        let key = Array(try Data(contentsOf: URL(fileURLWithPath: b.dir + "/server.key")))
        let attrs = try FileManager.default.attributesOfItem(atPath: b.dir + "/server.key")
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
        let plain = SHA256.hash(data: Array(code.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(hash != plain)
        #expect(OTPSecrets(key: key).matches(user: "alice", otpId: r.otpId!, code: code, codeHash: hash))
        let sms = try b.run(.sendOTP(user: "bob", channel: "sms", target: "+49 151 2345 6789"))
        #expect(sms.events[0].event.data.string(.target) == "***********89")
        #expect(b.code(try .sendOTP(user: "bob", channel: "fax", target: "x"))?.code == .invalidEvent)
        #expect(b.code(try .sendOTP(user: "bob", channel: "email", target: "not-an-address"))?.code == .invalidEvent)
    }

    @Test func noFileOfTheStoreHoldsTheCodeOrTheClearTarget() throws {
        // The LMDB store's files (the PostgreSQL store's files are the server's).
        let b = try Bench()
        var codes: [String] = []
        let targets = ["very.secret.person@example.org", "+4915123456789"]
        for (i, (channel, target)) in [("email", targets[0]), ("sms", targets[1])].enumerated() {
            let r = try b.run(.sendOTP(user: "u\(i)", channel: channel, target: target))
            codes.append(r.code!)
            // A wrong attempt and a right one: neither code reaches the log
            _ = try? b.run(.verifyOTP(user: "u\(i)", otpId: r.otpId!, code: r.code == "000000" ? "000001" : "000000"))
            try b.run(.verifyOTP(user: "u\(i)", otpId: r.otpId!, code: r.code!))
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: b.dir).filter { $0 != "server.key" }
        #expect(files.contains("data.mdb"))
        for f in files {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: b.dir + "/" + f)))
            for secret in codes + targets + ["very.secret.person", "15123456789"] {
                #expect(!contains(bytes, Array(secret.utf8)), "\(f) holds \(secret)")
            }
        }
        // The export neither
        let export = try b.ledger.exportText()
        for secret in codes + targets { #expect(!export.contains(secret)) }
    }

    func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= hay.count else { return false }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] {
            if hay[i..<(i + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    @Test(arguments: StorageKind.all) func aRightCodeGivesASingleUseGrant(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        let (oid, code) = try b.sendOTP(at: "2026-05-01T10:01:00Z")
        let v = try b.run(.verifyOTP(user: "alice", otpId: oid, code: code), at: "2026-05-01T10:02:00Z")
        let grant = try #require(v.grantId)
        #expect(v.events.map(\.event.type) == [.otpVerified])
        #expect(v.events[0].event.data.time(.grantExpiresAt) == t("2026-05-01T10:12:00Z"))
        #expect(b.code(.verifyOTP(user: "alice", otpId: oid, code: code))?.code == .otpNotFound)
        let reg = try b.run(b.register("laptop", grant: grant), at: "2026-05-01T10:03:00Z")
        #expect(reg.events[0].event.data.string(.via) == "otp")
        #expect(b.code(try b.register("tablet", grant: grant), at: "2026-05-01T10:09:00Z")?.code == .grantInvalid)
    }

    @Test(arguments: StorageKind.all) func aGrantExpiresAtGrantExpiresAt(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        let (oid, code) = try b.sendOTP()
        let grant = try b.run(.verifyOTP(user: "alice", otpId: oid, code: code)).grantId!
        #expect(b.code(try b.register("laptop", grant: grant), at: "2026-05-01T10:10:00Z")?.code == .grantInvalid)
    }

    @Test(arguments: StorageKind.all) func aWrongCodeIsRefusedButItsFailureIsAppendedAndCounted(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        let (oid, code) = try b.sendOTP()
        let wrong = code == "123456" ? "654321" : "123456"
        // Thrown, with the otp.failed it appended (durably: it is in the log).
        let first = refusal { try b.ledger.performBlocking(.verifyOTP(user: "alice", otpId: oid, code: wrong), clock: { [now = b.now] in now }) }
        #expect(first?.code == .otpInvalid && first?.remainingAttempts == 4)
        #expect(first?.appended?.map(\.event.type) == [.otpFailed])
        #expect(try b.ledger.head().seq == first?.appended?.last?.seq)
        for remaining in stride(from: 3, through: 0, by: -1) {
            let head = try b.ledger.head().seq
            let e = b.code(.verifyOTP(user: "alice", otpId: oid, code: wrong))
            #expect(e?.code == .otpInvalid)
            #expect(e?.remainingAttempts == remaining)
            #expect(try b.ledger.head().seq == head + 1)
            #expect(try b.lastEvents(1).first?.event.type == .otpFailed)
        }
        // Locked after maxAttempts: even the right code is refused, and nothing more is appended
        let head = try b.ledger.head().seq
        #expect(b.code(.verifyOTP(user: "alice", otpId: oid, code: code))?.code == .otpLocked)
        #expect(try b.ledger.head().seq == head)
    }

    @Test(arguments: StorageKind.all) func aNewOTPSupersedesTheEarlierOneAndCodesExpire(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        let first = try b.sendOTP()
        let second = try b.sendOTP(at: "2026-05-01T10:01:00Z")
        #expect(b.code(.verifyOTP(user: "alice", otpId: first.otpId, code: first.code))?.code == .otpNotFound)
        #expect(b.code(.verifyOTP(user: "alice", otpId: "unknown", code: "000000"))?.code == .otpNotFound)
        #expect(b.code(.verifyOTP(user: "alice", otpId: second.otpId, code: second.code), at: "2026-05-01T10:06:00Z")?.code == .otpExpired)
        // A code for another user's OTP does not verify this user's
        let other = try b.sendOTP("bob")
        #expect(b.code(.verifyOTP(user: "alice", otpId: other.otpId, code: other.code))?.code == .otpNotFound)
    }

    @Test(arguments: StorageKind.all) func theRateLimitIsOverARollingHour(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        for m in [0, 10, 20, 30, 40] { _ = try b.sendOTP(at: "2026-05-01T10:\(m == 0 ? "00" : String(m)):00Z") }
        let e = b.code(try .sendOTP(user: "alice", channel: "email", target: "alice@example.com"), at: "2026-05-01T10:59:59.999Z")
        #expect(e?.code == .otpRateLimited)
        #expect(e?.until == t("2026-05-01T11:00:00Z"))
        // Another user is not limited
        _ = try b.sendOTP("bob")
        // One hour after the first, one more may be sent; then the window is full again
        _ = try b.sendOTP(at: "2026-05-01T11:00:00Z")
        #expect(b.code(try .sendOTP(user: "alice", channel: "email", target: "alice@example.com"), at: "2026-05-01T11:05:00Z")?.code == .otpRateLimited)
        _ = try b.sendOTP(at: "2026-05-01T11:10:00Z")
    }

    @Test(arguments: StorageKind.all) func otpStepsAreNotBlockedByCooling(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        try b.run(.revokeAll(user: "alice", reason: nil), at: "2026-05-01T10:01:00Z")
        let (oid, code) = try b.sendOTP(at: "2026-05-01T10:02:00Z")
        let grant = try b.run(.verifyOTP(user: "alice", otpId: oid, code: code)).grantId!
        // The registration is a cooling operation: refused until 10:06, and the grant is not consumed
        let e = b.code(try b.register("laptop", grant: grant), at: "2026-05-01T10:05:00Z")
        #expect(e?.code == .coolingPeriodActive && e?.until == t("2026-05-01T10:06:00Z"))
        try b.run(b.register("laptop", grant: grant), at: "2026-05-01T10:06:00Z")
        #expect(try b.devices(includeRevoked: false).keys.sorted() == ["laptop"])
    }

    @Test(arguments: StorageKind.all) func namesCountGraphemeClusters(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone", name: "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}ab"))  // 3 characters
        try b.run(.rename(user: "alice", deviceId: "phone", name: String(repeating: "e\u{301}", count: 50)), at: "2026-05-01T10:01:00Z")
        #expect(b.code(.rename(user: "alice", deviceId: "phone", name: String(repeating: "e\u{301}", count: 51)), at: "2026-05-01T10:10:00Z")?.code == .invalidName)
        #expect(b.code(.rename(user: "alice", deviceId: "phone", name: "  ab\t"))?.code == .invalidName)
        #expect(try b.devices()["phone"]?["name"] == .string(String(repeating: "e\u{301}", count: 50)))
    }

    @Test(arguments: StorageKind.all) func argumentsAreCheckedLikeFixtureFields(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        try b.run(b.register("phone"))
        #expect(b.code(try .requestVerification(user: "alice", deviceId: "x", name: nil, kind: "toaster", platform: nil))?.code == .invalidEvent)
        #expect(b.code(try .requestVerification(user: "alice", deviceId: "x", name: "no", kind: nil, platform: nil))?.code == .invalidName)
        #expect(b.code(.issueChallenge(user: "alice", requestingDeviceId: "x", action: "Log In", context: nil))?.code == .invalidEvent)
        #expect(b.code(.access(user: "alice", deviceId: ""))?.code == .invalidEvent)
        #expect(b.code(.access(user: "", deviceId: "phone"))?.code == .invalidEvent)
        #expect(b.code(.approve(user: "alice", challengeId: String(repeating: "c", count: 129), deviceId: "phone", userVerified: nil))?.code == .invalidEvent)
        #expect(try b.ledger.head().seq == 1)
    }

    // MARK: policy

    @Test(arguments: StorageKind.all) func setPolicyAppendsToTheSystemStreamAndChangesTheRules(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        var d = EventData()
        d[.challengeTtlSeconds] = .int(120)
        d[.otpMaxAttempts] = .int(2)
        let r = try b.run(.setPolicy(PolicySet(d)), actor: "admin:root")
        #expect(r.events[0].event.user == nil)
        #expect(r.events[0].version == 1)
        #expect(try b.ledger.policy().challengeTtlSeconds == 120)
        let c = try b.run(.issueChallenge(user: "alice", requestingDeviceId: "x", action: "login", context: nil))
        #expect(c.events[0].event.data.time(.expiresAt) == t("2026-05-01T10:02:00Z"))
        let (oid, _) = try b.sendOTP()
        #expect(b.code(.verifyOTP(user: "alice", otpId: oid, code: "abcdef"))?.remainingAttempts == 1)
        #expect(b.code(.setPolicy(PolicySet()))?.code == .invalidEvent)
    }

    @Test(arguments: StorageKind.all) func theResultJSONHasTheShapeOfTheSpec(_ storage: StorageKind) throws {
        let b = try Bench(storage)
        let r = try b.run(.sendOTP(user: "alice", channel: "email", target: "alice@example.com"))
        let j = r.json
        #expect(j["events"]?.arrayValue?.first == .object([("seq", .int(1)), ("type", .string("otp.issued"))]))
        #expect(j["otpId"]?.stringValue == r.otpId)
        #expect(j["code"]?.stringValue == r.code)
    }
}
