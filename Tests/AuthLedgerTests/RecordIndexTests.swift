import Foundation
import AuthLedgerTestSupport
import Testing
@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerCore

/// Challenges, OTPs and grants live in per-user indexes beside the maintained state: the
/// state keeps only live ones (unresolved challenges, the latest OTP), so it does not grow
/// with a user's past, while every rule and answer about old ones stays what it was.
private let t0 = t("2026-05-01T08:00:00Z")

/// `t0` plus `seconds`, as a fixture time.
private func at(_ seconds: Int64) -> String { t0.adding(seconds: seconds).formatted }

@Suite struct RecordIndexTests {
    /// A device, then `n` challenges (approved or denied by it), 30 s apart, and an OTP
    /// verified every 30 challenges (`o0`, `o30`, …, grants `g0`, `g30`, …); challenge `c<k>`
    /// is requested by `web<k>`.
    static func past(_ n: Int, user: String = "alice") -> String {
        var lines = [line("device.registered", user: user, at: at(0),
                          data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)]
        for k in 0..<n {
            let s = Int64(k + 1) * 30
            lines.append(line("challenge.issued", user: user, at: at(s),
                              data: #"{"challengeId":"c\#(k)","action":"login","requestingDeviceId":"web\#(k)","expiresAt":"\#(at(s + 60))"}"#))
            lines.append(line(k % 2 == 0 ? "challenge.approved" : "challenge.denied", user: user, at: at(s + 5),
                              data: #"{"challengeId":"c\#(k)","approverDeviceId":"phone"}"#))
            if k % 30 == 0 {
                lines.append(line("otp.issued", user: user, at: at(s + 6),
                                  data: #"{"otpId":"o\#(k)","channel":"email","target":"a***@example.com","codeHash":"\#(String(repeating: "ab", count: 32))","expiresAt":"\#(at(s + 306))","maxAttempts":5}"#))
                lines.append(line("otp.verified", user: user, at: at(s + 7),
                                  data: #"{"otpId":"o\#(k)","grantId":"g\#(k)","grantExpiresAt":"\#(at(s + 7 + 3_000_000))"}"#))
            }
        }
        return lines.joined(separator: "\n")
    }

    static func stateBytes(_ ledger: Ledger, _ user: String) async throws -> Int {
        try await ledger.read(ReadLoad(states: [user])) { r in try r.projectionState(user)?.count ?? 0 }
    }

    @Test(arguments: StorageKind.all) func stateBytesDoNotGrowWithSettledChallengesAndOTPs(_ storage: StorageKind) async throws {
        // Given one user with 150 settled challenges and 5 OTPs, another with ten times as many
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.past(150, user: "short"))
        try await ledger.importText(Self.past(1500, user: "long"))
        // Then their maintained states are the same size, but for a few more digits in the
        // latest OTP's id and the version (it was ~70 bytes more per challenge)
        let short = try await Self.stateBytes(ledger, "short"), long = try await Self.stateBytes(ledger, "long")
        #expect(long <= short + 8, "state of 1500 challenges: \(long) bytes; of 150: \(short) bytes")
        // And an append keeps it so
        _ = try await ledger.perform(.access(user: "long", deviceId: "phone"), clock: { t("2026-06-01T00:00:00Z") })
        #expect(try await Self.stateBytes(ledger, "long") <= short + 8)
        #expect(try await ledger.verify().seq == ledger.head().seq)
    }

    @Test(arguments: StorageKind.all) func settledRecordsStillAnswerEveryRule(_ storage: StorageKind) async throws {
        // Given a user whose old challenges, OTPs and grants have left the state
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.past(50))
        let later = at(50 * 30 + 600)
        func refused(_ type: String, _ data: String) async -> String? {
            await refusal { try await ledger.importText(line(type, at: later, data: data)) }?.code.rawValue
        }
        // Then ids stay unique, and settled challenges answer as settled
        await #expect(refused("challenge.issued", #"{"challengeId":"c3","action":"login","requestingDeviceId":"x","expiresAt":"\#(at(50 * 30 + 700))"}"#) == "challenge_exists")
        await #expect(refused("challenge.approved", #"{"challengeId":"c3","approverDeviceId":"phone"}"#) == "challenge_resolved")
        await #expect(refused("challenge.expired", #"{"challengeId":"c4"}"#) == "challenge_resolved")
        await #expect(refused("otp.issued", #"{"otpId":"o0","channel":"sms","target":"+1***99","codeHash":"\#(String(repeating: "cd", count: 32))","expiresAt":"\#(at(50 * 30 + 900))","maxAttempts":5}"#) == "otp_exists")
        await #expect(refused("otp.failed", #"{"otpId":"o0"}"#) == "otp_not_found")
        await #expect(refused("otp.verified", #"{"otpId":"o30","grantId":"g0","grantExpiresAt":"\#(at(50 * 30 + 900))"}"#) == "invalid_event")
        // And an old approved login and an old unused grant still prove a registration
        await #expect(refused("device.registered", #"{"deviceId":"web2","name":"Web Two","kind":"browser","binding":"temporary","via":"trusted_device","challengeId":"c2"}"#) == "verification_required")
        try await ledger.importText(line("policy.set", user: nil, at: later, data: #"{"grantTtlSeconds":100000000}"#))
        try await ledger.importText(line("device.registered", at: later,
                                   data: #"{"deviceId":"web2","name":"Web Two","kind":"browser","binding":"temporary","via":"trusted_device","challengeId":"c2"}"#))
        let later2 = at(50 * 30 + 1000)
        try await ledger.importText(line("device.registered", at: later2,
                                   data: #"{"deviceId":"tab","name":"Tablet","kind":"tablet","binding":"permanent","via":"otp","grantId":"g0"}"#))
        // A used challenge and a used grant stay used
        #expect(await refusal { try await ledger.importText(line("device.registered", at: at(50 * 30 + 2000),
                                                     data: #"{"deviceId":"tab2","name":"Tablet 2","kind":"tablet","binding":"permanent","via":"otp","grantId":"g0"}"#)) }?.code == .grantInvalid)
        // And every answer is what a replay from scratch gives
        let o = QueryOptions(asOf: t("2026-07-01T00:00:00Z"))
        var scratch = o
        scratch.fromScratch = true
        func answer(_ id: String, _ o: QueryOptions) async -> String {
            do { return try await ledger.challenge(id, of: "alice", o).json.serialized() } catch { return "\(error)" }
        }
        for id in ["c0", "c1", "c2", "c49", "nope"] {
            await #expect(answer(id, o) == answer(id, scratch), "challenge \(id)")
        }
        #expect(try await ledger.challenge("c2", of: "alice", o).json["outcome"] == .string("approved"))
        #expect(try await ledger.challenge("c1", of: "alice", o).json["outcome"] == .string("denied"))
        #expect(try await ledger.devices(of: "alice", o).json == ledger.devices(of: "alice", scratch).json)
        #expect(try await ledger.verify().seq == ledger.head().seq)
    }

    @Test(arguments: StorageKind.all) func pendingAndSweeperStillSeeUnresolvedChallenges(_ storage: StorageKind) async throws {
        // Given settled challenges and two unresolved ones (one past its expiry)
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.past(20))
        try await ledger.importText([
            line("challenge.issued", at: at(700), data: #"{"challengeId":"old","action":"login","requestingDeviceId":"x","expiresAt":"\#(at(760))"}"#),
            line("challenge.issued", at: at(800), data: #"{"challengeId":"open","action":"login","requestingDeviceId":"y","expiresAt":"\#(at(100_000))"}"#),
        ].joined(separator: "\n"))
        // Then pending lists the open one, and the sweeper expires the old one only
        let pending = try await ledger.pending(of: "alice", QueryOptions(asOf: t0.adding(seconds: 900))).json
        #expect(pending.arrayValue?.map { $0["challengeId"] } == [.string("open")])
        let swept = try await ledger.expireDueChallenges(now: t0.adding(seconds: 900))
        #expect(swept.map { $0.event.data.string(.challengeId) } == ["old"])
        // And the expired one is answered from its index
        #expect(try await ledger.challenge("old", of: "alice", QueryOptions(asOf: t0.adding(seconds: 900))).json["outcome"] == .string("expired"))
        #expect(try await ledger.verify().seq == ledger.head().seq)
    }

    @Test(arguments: StorageKind.all) func verifyChecksTheIndexesAndReplayRebuildsThem(_ storage: StorageKind) async throws {
        // Given a store with settled challenges, OTPs and grants
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.past(30))
        let head = try await ledger.verify()
        let c5 = try await ledger.challenge("c5", of: "alice", QueryOptions(asOf: t("2026-07-01T00:00:00Z"))).json
        // When a record is changed, added or lost, then verify names it tampered
        var c4 = ReadLoad()
        c4.records = [(.challenge, "alice", "c4")]
        let changed = try #require(try await ledger.read(c4) { r in try r.record(.challenge, user: "alice", id: "c4") })
        for damage in [{ (w: any StorageWriter) in try w.putRecord(.challenge, user: "alice", id: "c4", Array(changed.dropLast()) + [9]) },
                       { w in try w.putRecord(.grant, user: "alice", id: "forged", RecordCodec.encode(GrantRecord(grantId: "forged", otpId: "o0", expiresAt: t0))) },
                       { w in try w.clearRecords() }] as [(any StorageWriter) throws -> Void] {
            try await ledger.write { w in try damage(w) }
            #expect(await refusal { try await ledger.verify() }?.code == .tampered)
            // And replay rebuilds them: verify passes and answers are back
            try await ledger.replay()
            #expect(try await ledger.verify() == head)
            #expect(try await ledger.challenge("c5", of: "alice", QueryOptions(asOf: t("2026-07-01T00:00:00Z"))).json == c5)
        }
    }

    /// Every record and state of `users` (challenges `c<k>`, OTPs and grants of `past`), as stored.
    static func stored(_ ledger: Ledger, _ users: [String], challenges n: Int) async throws -> [String: [UInt8]] {
        var load = ReadLoad(states: users)
        load.allRecords = true
        return try await ledger.read(load) { r in
            var all: [String: [UInt8]] = [:]
            for user in users {
                all["state \(user)"] = try r.projectionState(user)
                for k in 0..<n { all["c\(k) \(user)"] = try r.record(.challenge, user: user, id: "c\(k)") }
                for k in stride(from: 0, to: n, by: 30) {
                    all["o\(k) \(user)"] = try r.record(.otp, user: user, id: "o\(k)")
                    all["g\(k) \(user)"] = try r.record(.grant, user: user, id: "g\(k)")
                }
            }
            return all
        }
    }

    /// A rebuild stores every state and record again: the same bytes the appends kept, for
    /// many users and for the longest user keys, whose index keys are digests.
    @Test(arguments: StorageKind.all) func replayStoresTheSameRecordsAndStatesAsTheAppends(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let users = (0..<40).map { "user\(($0 * 7919) % 40)" } + [String(repeating: "\u{1F600}", count: 128), "\u{1F600}"]
        for user in users { try await ledger.importText(Self.past(31, user: user)) }
        let before = try await Self.stored(ledger, users, challenges: 31)
        #expect(before.values.count == users.count * 36)  // a state, 31 challenges, 2 OTPs, 2 grants
        let head = try await ledger.verify()
        try await ledger.replay()
        #expect(try await Self.stored(ledger, users, challenges: 31) == before)
        #expect(try await ledger.verify() == head)
    }

    @Test func aStoreInTheOlderLayoutIsRebuiltOnOpen() async throws {
        // Given a store whose indexes are missing and whose layout mark is absent (as before the indexes)
        let dir = Support.tempDir()
        do {
            let ledger = try await Ledger(lmdb: dir)
            try await ledger.importText(Self.past(5))
            try await ledger.write { w in
                try w.clearRecords()
                try w.putMetaValue(Ledger.projectionLayoutKey, nil)
            }
        }
        // When it is opened again
        let ledger = try await Ledger(lmdb: dir)
        // Then its projections were rebuilt: verify passes and a settled challenge answers
        #expect(try await ledger.verify().seq == ledger.head().seq)
        #expect(try await ledger.challenge("c1", of: "alice", QueryOptions(asOf: t("2026-07-01T00:00:00Z"))).json["outcome"] == .string("denied"))
    }
}
