import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import Testing

/// Email links (reference section 11): given a verification request made by a command, when
/// its link token is redeemed (or not), then the device is registered once, by the latest
/// request's token only, before it expires — and the token is never stored.
@Suite struct VerificationLinkTests {
    static func request(_ b: Bench, _ device: String = "laptop", name: String? = "Work Laptop", at: String? = nil) async throws -> CommandResult {
        try await b.run(.requestVerification(user: "alice", deviceId: device, name: name, kind: "desktop", platform: "linux"), at: at)
    }

    static func redeem(_ b: Bench, _ token: String, name: String? = nil, at: String? = nil, publicKey: StringMap? = nil) async throws -> CommandResult {
        if let at { b.now = t(at) }
        let n = b.now
        return try await b.ledger.redeemLink(try LinkRedemptionRequest(token: token, name: name, publicKey: publicKey), clock: { n })
    }

    @Test(arguments: StorageKind.all) func aRequestRecordsTheLinkHashAndAnswersTheTokenOnce(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let r = try await Self.request(b, at: "2026-05-01T10:01:00Z")
        let token = try #require(r.token)
        #expect(token.utf8.count == 43 && Base64URL.decode(token)?.count == 32)
        let data = r.events[0].event.data
        #expect(data.string(.verificationId) == r.verificationId)
        #expect(data.string(.linkHash)?.utf8.count == 64)
        #expect(data.time(.linkExpiresAt) == t("2026-05-01T10:11:00Z"))
        #expect(r.json["token"] == .string(token))
        // The token is in no event and no export: only its keyed hash is
        await #expect(!(try b.ledger.exportText()).contains(token))
        #expect(data.string(.linkHash) != token)
        // Two requests never share a token
        let r2 = try await Self.request(b, "tablet")
        #expect(r2.token != token && r2.verificationId != r.verificationId)
    }

    @Test(arguments: StorageKind.all) func redeemingRegistersTheDeviceOnceViaEmailLink(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let r = try await Self.request(b, at: "2026-05-01T10:01:00Z")
        // The command side appends via: email_link only by redeeming
        await #expect(b.code(try b.register("laptop", via: "email_link"))?.code == .verificationRequired)
        await #expect(b.code(try b.register("laptop"))?.code == .verificationRequired)
        let key = ProofKey(.es256)
        let done = try await Self.redeem(b, r.token!, name: "ignored: the request named it", at: "2026-05-01T10:05:00Z", publicKey: key.jwk)
        let e = done.events[0].event
        #expect(e.type == .registered)
        #expect(e.data.string(.via) == "email_link")
        #expect(e.data.string(.verificationId) == r.verificationId)
        #expect(e.data.string(.name) == "Work Laptop")
        #expect(e.data.string(.kind) == "desktop")
        #expect(done.verificationId == r.verificationId)
        let laptop = try await b.devices()["laptop"]!
        #expect(laptop["status"] == .string("active"))
        #expect(laptop["keyThumbprint"] == .string(key.thumbprint))
        // Single use
        #expect(await refusal { _ = try await Self.redeem(b, r.token!) }?.code == .linkInvalid)
        #expect(try await b.ledger.verify().seq == 3)
        try await b.ledger.replay()
        #expect(await refusal { _ = try await Self.redeem(b, r.token!) }?.code == .linkInvalid)
    }

    @Test(arguments: StorageKind.all) func onlyTheLatestUnexpiredLinkOfAPendingDeviceWorks(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let first = try await Self.request(b, at: "2026-05-01T10:01:00Z")
        let second = try await Self.request(b, at: "2026-05-01T10:02:00Z")
        // Superseded
        #expect(await refusal { _ = try await Self.redeem(b, first.token!) }?.code == .linkInvalid)
        // Expired (10 minutes after 10:02), with its expiry
        let late = await refusal { _ = try await Self.redeem(b, second.token!, at: "2026-05-01T10:12:00Z") }
        #expect(late?.code == .linkExpired)
        #expect(late?.until == t("2026-05-01T10:12:00Z"))
        // Unknown and malformed
        #expect(await refusal { _ = try await Self.redeem(b, LinkToken.random()) }?.code == .linkInvalid)
        #expect(await refusal { _ = try await Self.redeem(b, "short") }?.code == .invalidEvent)
        #expect(await refusal { _ = try await Self.redeem(b, String(repeating: "=", count: 43)) }?.code == .invalidEvent)
        // A revoked device's link
        let third = try await Self.request(b, at: "2026-05-01T10:13:00Z")
        try await b.run(.revoke(user: "alice", deviceId: "laptop", reason: nil), at: "2026-05-01T10:14:00Z")
        #expect(await refusal { _ = try await Self.redeem(b, third.token!) }?.code == .linkInvalid)
        #expect(try await b.ledger.head().seq == 5)
        // A shorter policy TTL applies to later requests
        try await b.run(.setPolicy(PolicySet(verificationLinkTtlSeconds: 60)))
        let short = try await Self.request(b, "tablet", at: "2026-05-01T10:30:00Z")
        #expect(short.events[0].event.data.time(.linkExpiresAt) == t("2026-05-01T10:31:00Z"))
    }

    @Test func aRequestWithoutANameNeedsOneAtRedemption() async throws {
        let b = try await Bench()
        try await b.run(b.register("phone"))
        let r = try await Self.request(b, name: nil, at: "2026-05-01T10:01:00Z")
        #expect(await refusal { _ = try await Self.redeem(b, r.token!) }?.code == .invalidName)
        let done = try await Self.redeem(b, r.token!, name: "  Kitchen Tablet ")
        #expect(done.events[0].event.data.string(.name) == "Kitchen Tablet")
    }

    @Test func importedRequestsWithoutALinkKeepTheOldRuleAndIdsAreUnique() async throws {
        let b = try await Bench()
        let base = [
            line("device.registered", at: "2026-05-01T09:00:00Z", data: #"{"deviceId":"phone","name":"Alice Phone","kind":"mobile","binding":"permanent","via":"initial"}"#),
            line("device.verification_requested", at: "2026-05-01T09:01:00Z", data: #"{"deviceId":"laptop","verificationId":"v1"}"#),
        ]
        try await b.ledger.importText(base.joined(separator: "\n"))
        // A second request with the same verificationId is invalid_event
        #expect(await refusal { try await b.ledger.importText(line("device.verification_requested", at: "2026-05-01T09:02:00Z", data: #"{"deviceId":"tablet","verificationId":"v1"}"#)) }?.code == .invalidEvent)
        // A request without linkHash: registration via email_link needs only the pending device (the verificationId, if given, must be the latest)
        #expect(await refusal { try await b.ledger.importText(line("device.registered", at: "2026-05-01T09:03:00Z", data: #"{"deviceId":"laptop","name":"Laptop","kind":"desktop","binding":"permanent","via":"email_link","verificationId":"v0"}"#)) }?.code == .verificationRequired)
        try await b.ledger.importText(line("device.registered", at: "2026-05-01T09:03:00Z", data: #"{"deviceId":"laptop","name":"Laptop","kind":"desktop","binding":"permanent","via":"email_link"}"#))
        // verificationId goes with via email_link only; linkHash needs linkExpiresAt and a verificationId
        #expect(await refusal { try await b.ledger.importText(line("device.registered", at: "2026-05-01T09:04:00Z", data: #"{"deviceId":"x","name":"Xdevice","kind":"desktop","binding":"permanent","via":"admin","verificationId":"v1"}"#)) }?.code == .invalidEvent)
        let hash = String(repeating: "ab", count: 32)
        #expect(await refusal { try await b.ledger.importText(line("device.verification_requested", at: "2026-05-01T09:04:00Z", data: #"{"deviceId":"y","verificationId":"v9","linkHash":"\#(hash)"}"#)) }?.code == .invalidEvent)
        #expect(await refusal { try await b.ledger.importText(line("device.verification_requested", at: "2026-05-01T09:04:00Z", data: #"{"deviceId":"y","linkHash":"\#(hash)","linkExpiresAt":"2026-05-01T09:14:00Z"}"#)) }?.code == .invalidEvent)
    }

    @Test(arguments: StorageKind.all) func anImportedRequestWithALinkNeedsItsVerificationIdInTime(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let hash = String(repeating: "cd", count: 32)
        try await b.ledger.importText([
            line("device.registered", at: "2026-05-01T09:00:00Z", data: #"{"deviceId":"phone","name":"Alice Phone","kind":"mobile","binding":"permanent","via":"initial"}"#),
            line("device.verification_requested", at: "2026-05-01T09:01:00Z", data: #"{"deviceId":"laptop","verificationId":"v1","linkHash":"\#(hash)","linkExpiresAt":"2026-05-01T09:11:00Z"}"#),
        ].joined(separator: "\n"))
        let reg = { (at: String, vid: String?) in
            line("device.registered", at: at, data: #"{"deviceId":"laptop","name":"Laptop","kind":"desktop","binding":"permanent","via":"email_link"\#(vid.map { #","verificationId":"\#($0)""# } ?? "")}"#)
        }
        #expect(await refusal { try await b.ledger.importText(reg("2026-05-01T09:02:00Z", nil)) }?.code == .verificationRequired)
        #expect(await refusal { try await b.ledger.importText(reg("2026-05-01T09:11:00Z", "v1")) }?.code == .verificationRequired)
        try await b.ledger.importText(reg("2026-05-01T09:10:59Z", "v1"))
        // The same link hash is never issued twice, for any user
        #expect(await refusal { try await b.ledger.importText(line("device.verification_requested", user: "bob", at: "2026-05-01T09:12:00Z", data: #"{"deviceId":"p","verificationId":"v1","linkHash":"\#(hash)","linkExpiresAt":"2026-05-01T09:20:00Z"}"#)) }?.code == .invalidEvent)
        #expect(try await b.ledger.verify().seq == 3)
    }
}
