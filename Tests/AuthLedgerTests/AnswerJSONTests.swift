@testable import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

/// The answers read back from their JSON documents (what AuthLedgerClient returns) are the
/// values the ledger answered with.
@Suite struct AnswerJSONTests {
    @Test func everyAnswerReadsBackFromItsDocument() async throws {
        let b = try await WatchBench(.lmdb)
        try await b.register("phone")
        try await b.register("laptop", via: "admin")
        try await b.run(try .requestVerification(user: "alice", deviceId: "tablet", name: "Tablet", kind: nil, platform: nil))
        let id = try await b.run(.issueChallenge(user: "alice", requestingDeviceId: "tablet", action: "login",
                                                 context: StringMap([("ip", "10.0.0.1")]))).challengeId!
        let o = QueryOptions(asOf: b.now, current: "phone", includeRevoked: true)
        let devices = try await b.ledger.devices(of: "alice", o)
        #expect(devices.devices.count == 3 && devices.cooling.active)
        let devicesBack = try DeviceList(json: devices.json)
        #expect(devicesBack == devices)
        let cooling = try await b.ledger.cooling(of: "alice", o)
        let coolingBack = try CoolingAnswer(json: cooling.json)
        #expect(coolingBack == cooling)
        let pending = try await b.ledger.pending(of: "alice", o)
        let pendingBack = try PendingChallenge.list(json: .array(pending.map(\.json)))
        #expect(pending.count == 1 && pendingBack == pending)
        for view in [o, QueryOptions(asOf: b.now, asRequester: true)] {
            let c = try await b.ledger.challenge(id, of: "alice", view)
            let back = try ChallengeView(json: c.json)
            #expect(back == c)
        }
        // Not an answer: refused, not guessed
        #expect(throws: LedgerError.self) { try DeviceList(json: .array([])) }
        #expect(throws: LedgerError.self) { try ChallengeView(json: .object([("challengeId", .string("c")), ("status", .string("pending")), ("outcome", .string("maybe"))])) }
        // After an erasure: erased values read back as erased
        _ = try await b.ledger.erase("alice", now: b.now)
        let erased = try await b.ledger.devices(of: "alice", o)
        let erasedBack = try DeviceList(json: erased.json)
        #expect(erased.erased && erasedBack == erased)
    }
}
