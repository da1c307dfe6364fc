import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Crypto
import Foundation
import Testing

/// The one-time-code commands (issue, verify, grants, the hourly limit) and the policy command.
extension CommandTests {
    @Test(arguments: StorageKind.all) func sendOTPReturnsSixDigitsAndRecordsOnlyAKeyedHashAndAMaskedTarget(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let r = try await b.run(.sendOTP(user: "alice", channel: "email", target: "alice@example.com"))
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
        let sms = try await b.run(.sendOTP(user: "bob", channel: "sms", target: "+49 151 2345 6789"))
        #expect(sms.events[0].event.data.string(.target) == "***********89")
        await #expect(b.code(try .sendOTP(user: "bob", channel: "fax", target: "x"))?.code == .invalidEvent)
        await #expect(b.code(try .sendOTP(user: "bob", channel: "email", target: "not-an-address"))?.code == .invalidEvent)
    }

    @Test func noFileOfTheStoreHoldsTheCodeOrTheClearTarget() async throws {
        // The LMDB store's files (the PostgreSQL store's files are the server's).
        let b = try await Bench()
        var codes: [String] = []
        let targets = ["very.secret.person@example.org", "+4915123456789"]
        for (i, (channel, target)) in [("email", targets[0]), ("sms", targets[1])].enumerated() {
            let r = try await b.run(.sendOTP(user: "u\(i)", channel: channel, target: target))
            codes.append(r.code!)
            // A wrong attempt and a right one: neither code reaches the log
            _ = try? await b.run(.verifyOTP(user: "u\(i)", otpId: r.otpId!, code: r.code == "000000" ? "000001" : "000000"))
            try await b.run(.verifyOTP(user: "u\(i)", otpId: r.otpId!, code: r.code!))
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
        let export = try await b.ledger.exportText()
        for secret in codes + targets { #expect(!export.contains(secret)) }
    }

    func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= hay.count else { return false }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] {
            if hay[i..<(i + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    @Test(arguments: StorageKind.all) func aRightCodeGivesASingleUseGrant(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let (oid, code) = try await b.sendOTP(at: "2026-05-01T10:01:00Z")
        let v = try await b.run(.verifyOTP(user: "alice", otpId: oid, code: code), at: "2026-05-01T10:02:00Z")
        let grant = try #require(v.grantId)
        #expect(v.events.map(\.event.type) == [.otpVerified])
        #expect(v.events[0].event.data.time(.grantExpiresAt) == t("2026-05-01T10:12:00Z"))
        await #expect(b.code(.verifyOTP(user: "alice", otpId: oid, code: code))?.code == .otpNotFound)
        let reg = try await b.run(b.register("laptop", grant: grant), at: "2026-05-01T10:03:00Z")
        #expect(reg.events[0].event.data.string(.via) == "otp")
        await #expect(b.code(try b.register("tablet", grant: grant), at: "2026-05-01T10:09:00Z")?.code == .grantInvalid)
    }

    @Test(arguments: StorageKind.all) func aGrantExpiresAtGrantExpiresAt(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        let (oid, code) = try await b.sendOTP()
        let grant = try await b.run(.verifyOTP(user: "alice", otpId: oid, code: code)).grantId!
        await #expect(b.code(try b.register("laptop", grant: grant), at: "2026-05-01T10:10:00Z")?.code == .grantInvalid)
    }

    @Test(arguments: StorageKind.all) func aWrongCodeIsRefusedButItsFailureIsAppendedAndCounted(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let (oid, code) = try await b.sendOTP()
        let wrong = code == "123456" ? "654321" : "123456"
        // Thrown, with the otp.failed it appended (durably: it is in the log).
        let first = await refusal { _ = try await b.ledger.perform(.verifyOTP(user: "alice", otpId: oid, code: wrong), clock: { [now = b.now] in now }) }
        #expect(first?.code == .otpInvalid && first?.remainingAttempts == 4)
        #expect(first?.appended?.map(\.event.type) == [.otpFailed])
        #expect(try await b.ledger.head().seq == first?.appended?.last?.seq)
        for remaining in stride(from: 3, through: 0, by: -1) {
            let head = try await b.ledger.head().seq
            let e = await b.code(.verifyOTP(user: "alice", otpId: oid, code: wrong))
            #expect(e?.code == .otpInvalid)
            #expect(e?.remainingAttempts == remaining)
            #expect(try await b.ledger.head().seq == head + 1)
            await #expect(try b.lastEvents(1).first?.event.type == .otpFailed)
        }
        // Locked after maxAttempts: even the right code is refused, and nothing more is appended
        let head = try await b.ledger.head().seq
        await #expect(b.code(.verifyOTP(user: "alice", otpId: oid, code: code))?.code == .otpLocked)
        #expect(try await b.ledger.head().seq == head)
    }

    @Test(arguments: StorageKind.all) func aNewOTPSupersedesTheEarlierOneAndCodesExpire(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let first = try await b.sendOTP()
        let second = try await b.sendOTP(at: "2026-05-01T10:01:00Z")
        await #expect(b.code(.verifyOTP(user: "alice", otpId: first.otpId, code: first.code))?.code == .otpNotFound)
        await #expect(b.code(.verifyOTP(user: "alice", otpId: "unknown", code: "000000"))?.code == .otpNotFound)
        await #expect(b.code(.verifyOTP(user: "alice", otpId: second.otpId, code: second.code), at: "2026-05-01T10:06:00Z")?.code == .otpExpired)
        // A code for another user's OTP does not verify this user's
        let other = try await b.sendOTP("bob")
        await #expect(b.code(.verifyOTP(user: "alice", otpId: other.otpId, code: other.code))?.code == .otpNotFound)
    }

    @Test(arguments: StorageKind.all) func theRateLimitIsOverARollingHour(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        for m in [0, 10, 20, 30, 40] { _ = try await b.sendOTP(at: "2026-05-01T10:\(m == 0 ? "00" : String(m)):00Z") }
        let e = await b.code(try .sendOTP(user: "alice", channel: "email", target: "alice@example.com"), at: "2026-05-01T10:59:59.999Z")
        #expect(e?.code == .otpRateLimited)
        #expect(e?.until == t("2026-05-01T11:00:00Z"))
        // Another user is not limited
        _ = try await b.sendOTP("bob")
        // One hour after the first, one more may be sent; then the window is full again
        _ = try await b.sendOTP(at: "2026-05-01T11:00:00Z")
        await #expect(b.code(try .sendOTP(user: "alice", channel: "email", target: "alice@example.com"), at: "2026-05-01T11:05:00Z")?.code == .otpRateLimited)
        _ = try await b.sendOTP(at: "2026-05-01T11:10:00Z")
    }

    @Test(arguments: StorageKind.all) func otpStepsAreNotBlockedByCooling(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        try await b.run(.revokeAll(user: "alice", reason: nil), at: "2026-05-01T10:01:00Z")
        let (oid, code) = try await b.sendOTP(at: "2026-05-01T10:02:00Z")
        let grant = try await b.run(.verifyOTP(user: "alice", otpId: oid, code: code)).grantId!
        // The registration is a cooling operation: refused until 10:06, and the grant is not consumed
        let e = await b.code(try b.register("laptop", grant: grant), at: "2026-05-01T10:05:00Z")
        #expect(e?.code == .coolingPeriodActive && e?.until == t("2026-05-01T10:06:00Z"))
        try await b.run(b.register("laptop", grant: grant), at: "2026-05-01T10:06:00Z")
        await #expect(try b.devices(includeRevoked: false).keys.sorted() == ["laptop"])
    }

    @Test(arguments: StorageKind.all) func namesCountGraphemeClusters(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone", name: "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}ab"))  // 3 characters
        try await b.run(.rename(user: "alice", deviceId: "phone", name: String(repeating: "e\u{301}", count: 50)), at: "2026-05-01T10:01:00Z")
        await #expect(b.code(.rename(user: "alice", deviceId: "phone", name: String(repeating: "e\u{301}", count: 51)), at: "2026-05-01T10:10:00Z")?.code == .invalidName)
        await #expect(b.code(.rename(user: "alice", deviceId: "phone", name: "  ab\t"))?.code == .invalidName)
        await #expect(try b.devices()["phone"]?["name"] == .string(String(repeating: "e\u{301}", count: 50)))
    }

    @Test(arguments: StorageKind.all) func argumentsAreCheckedLikeFixtureFields(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        try await b.run(b.register("phone"))
        await #expect(b.code(try .requestVerification(user: "alice", deviceId: "x", name: nil, kind: "toaster", platform: nil))?.code == .invalidEvent)
        await #expect(b.code(try .requestVerification(user: "alice", deviceId: "x", name: "no", kind: nil, platform: nil))?.code == .invalidName)
        await #expect(b.code(.issueChallenge(user: "alice", requestingDeviceId: "x", action: "Log In", context: nil))?.code == .invalidEvent)
        await #expect(b.code(.access(user: "alice", deviceId: ""))?.code == .invalidEvent)
        await #expect(b.code(.access(user: "", deviceId: "phone"))?.code == .invalidEvent)
        await #expect(b.code(.approve(user: "alice", challengeId: String(repeating: "c", count: 129), deviceId: "phone", userVerified: nil))?.code == .invalidEvent)
        #expect(try await b.ledger.head().seq == 1)
    }

    // MARK: policy

    @Test(arguments: StorageKind.all) func setPolicyAppendsToTheSystemStreamAndChangesTheRules(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        var d = EventData()
        d[.challengeTtlSeconds] = .int(120)
        d[.otpMaxAttempts] = .int(2)
        let r = try await b.run(.setPolicy(PolicySet(d)), actor: "admin:root")
        #expect(r.events[0].event.user == nil)
        #expect(r.events[0].version == 1)
        #expect(try await b.ledger.policy().challengeTtlSeconds == 120)
        let c = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "x", action: "login", context: nil))
        #expect(c.events[0].event.data.time(.expiresAt) == t("2026-05-01T10:02:00Z"))
        let (oid, _) = try await b.sendOTP()
        await #expect(b.code(.verifyOTP(user: "alice", otpId: oid, code: "abcdef"))?.remainingAttempts == 1)
        await #expect(b.code(.setPolicy(PolicySet()))?.code == .invalidEvent)
    }

    @Test(arguments: StorageKind.all) func theResultJSONHasTheShapeOfTheSpec(_ storage: StorageKind) async throws {
        let b = try await Bench(storage)
        let r = try await b.run(.sendOTP(user: "alice", channel: "email", target: "alice@example.com"))
        let j = r.json
        #expect(j["events"]?.arrayValue?.first == .object([("seq", .int(1)), ("type", .string("otp.issued"))]))
        #expect(j["otpId"]?.stringValue == r.otpId)
        #expect(j["code"]?.stringValue == r.code)
    }
}
