import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import AuthLedgerTestSupport
import Testing

/// The log: idempotency, atomic refusal, export → import round trip, verify, replay.
@Suite struct LedgerTests {
    static let phone = line("device.registered", at: "2026-03-01T09:00:00Z",
                            data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#,
                            id: "b0000000-0000-4000-8000-000000000001")

    /// Every scenario fixture, in one store (five users, one policy stream).
    static func allScenarios(_ storage: StorageKind = .lmdb) async throws -> Ledger {
        let ledger = try await storage.freshLedger()
        for name in ScenarioFixtureTests.scenarios {
            let bytes = Array(try Data(contentsOf: Support.fixture("scenarios/\(name).jsonl")))
            _ = try await ledger.append(try EventDecoder.decodeLines(bytes, file: name).map(\.input))
        }
        return ledger
    }

    @Test(arguments: StorageKind.all) func anEventWithAKnownIdAndTheSameContentIsSkipped(_ storage: StorageKind) async throws {
        // Given an event with an explicit id in the log
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.phone)
        // When the same event is appended again, alone and twice within one request
        let once = try await ledger.importText(Self.phone)
        let twice = try await ledger.importText(Self.phone + "\n" + Self.phone)
        // Then nothing is appended and the duplicates are counted
        #expect(once.appended.isEmpty && once.duplicates == 1)
        #expect(twice.appended.isEmpty && twice.duplicates == 2)
        #expect(try await ledger.head().seq == 1)
    }

    @Test(arguments: StorageKind.all) func anEventWithAKnownIdAndOtherContentIsDuplicateEventId(_ storage: StorageKind) async throws {
        // Given an event with an explicit id in the log
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.phone)
        let before = try await ledger.exportText()
        // When another event with that id is appended (the id differs only in case: ids are UUIDs)
        let other = Self.phone.replacingOccurrences(of: "My Phone", with: "My Other Phone")
            .replacingOccurrences(of: "b0000000", with: "B0000000")
        let e = await refusal { try await ledger.importText(other) }
        // Then it is refused and the log is unchanged
        #expect(e?.code == .duplicateEventId)
        await #expect(try ledger.exportText() == before)
    }

    @Test(arguments: StorageKind.all) func aRefusedRequestAppendsNothingOfItsValidEvents(_ storage: StorageKind) async throws {
        // Given a store with one device
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.phone)
        let before = try await ledger.exportText()
        // When a request of three valid events and a fourth that breaks a rule is appended
        let text = [
            line("device.accessed", at: "2026-03-01T09:01:00Z", data: #"{"deviceId":"phone"}"#),
            line("device.renamed", at: "2026-03-01T09:02:00Z", data: #"{"deviceId":"phone","name":"Phone Two"}"#),
            line("device.accessed", user: "bob", at: "2026-03-01T09:03:00Z", data: #"{"deviceId":"x"}"#),
        ].joined(separator: "\n")
        let good = [
            line("device.accessed", at: "2026-03-01T09:01:00Z", data: #"{"deviceId":"phone"}"#),
            line("device.renamed", at: "2026-03-01T09:02:00Z", data: #"{"deviceId":"phone","name":"Phone Two"}"#),
            line("policy.set", user: nil, at: "2026-03-01T09:02:30Z", data: #"{"maxDevices":3}"#),
        ].joined(separator: "\n")
        let e1 = await refusal { try await ledger.importText(text) }
        let e2 = await refusal { try await ledger.importText(good + "\n" + line("device.renamed", at: "2026-03-01T09:04:00Z", data: #"{"deviceId":"phone","name":"Phone Three"}"#)) }
        // Then each is refused at its bad event, and the export is byte-identical
        #expect(e1?.code == .deviceNotFound && e1?.index == 2)
        #expect(e2?.code == .coolingPeriodActive && e2?.index == 3)
        #expect(e2?.until == t("2026-03-01T09:07:00Z"))
        await #expect(try ledger.exportText() == before)
        #expect(try await ledger.policy() == Policy())
        #expect(try await ledger.devices(of: "alice", QueryOptions(asOf: t("2026-03-01T10:00:00Z"))).json["devices"]?.arrayValue?.first?["name"] == .string("My Phone"))
    }

    @Test(arguments: StorageKind.all) func exportThenImportIntoAFreshStoreGivesTheSameChain(_ storage: StorageKind) async throws {
        // Given every scenario in one store, exported
        let source = try await Self.allScenarios(storage)
        let export = try await source.exportText()
        // When the export (recorded form, with seq, version, prev and hash) is imported into a fresh store
        let target = try await storage.freshLedger()
        let outcome = try await target.append(try EventDecoder.decodeLines(Array(export.utf8)).map(\.input))
        // Then the head, every hash and the export bytes are identical
        #expect(outcome.head == (try await source.head()))
        await #expect(try target.exportText() == export)
        #expect(try await target.verify() == source.head())
        // And importing it again is a no-op
        let again = try await target.append(try EventDecoder.decodeLines(Array(export.utf8)).map(\.input))
        #expect(again.appended.isEmpty && again.duplicates == outcome.appended.count)
    }

    @Test(arguments: StorageKind.all) func theExportReVerifiesWithThePythonRecipe(_ storage: StorageKind) async throws {
        // Given every scenario exported
        let export = try await Self.allScenarios(storage).exportText()
        // When tools/verify-export.py reads it
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Support.root.appendingPathComponent("tools/verify-export.py").path]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        input.fileHandleForWriting.write(Data(export.utf8))
        try input.fileHandleForWriting.close()
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        // Then the independent recipe agrees with the chain
        #expect(p.terminationStatus == 0)
        #expect(out.hasPrefix("ok: 45 events"))
    }

    @Test func verifyNamesTheFirstEventWhoseStoredBytesChanged() async throws {
        // Given a store whose second event carries a distinctive value, closed
        let dir = Support.tempDir()
        do {
            let ledger = try await Ledger(lmdb: dir)
            try await ledger.importText([
                Self.phone,
                line("device.accessed", at: "2026-03-01T09:01:00Z", data: #"{"deviceId":"phone"}"#, meta: #"{"requestId":"tamper-me-7f3a"}"#),
                line("device.accessed", at: "2026-03-01T09:02:00Z", data: #"{"deviceId":"phone"}"#),
            ].joined(separator: "\n"))
            #expect(try await ledger.verify().seq == 3)
        }
        // When one byte of that value is flipped in data.mdb
        let file = dir + "/data.mdb"
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        let needle = Array("tamper-me-7f3a".utf8)
        var hits = 0
        var i = 0
        while i + needle.count <= bytes.count {
            if bytes[i] == needle[0] && Array(bytes[i..<(i + needle.count)]) == needle {
                bytes[i + needle.count - 1] ^= 0x01
                hits += 1
            }
            i += 1
        }
        try #require(hits > 0)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        // Then verify refuses with tampered, naming seq 2
        let e = await refusal { _ = try await Ledger(lmdb: dir).verify() }
        #expect(e?.code == .tampered)
        #expect(e?.seq == 2)
    }

    @Test(arguments: StorageKind.all) func replayFromScratchEqualsMaintainedProjectionsAtManyPoints(_ storage: StorageKind) async throws {
        // Given every scenario in one store
        let ledger = try await Self.allScenarios(storage)
        let events = try await ledger.events()
        let head = try await ledger.head().seq
        var times: Set<Int64> = [t("2030-01-01T00:00:00Z").milliseconds]
        for e in events {
            let ms = e.event.at.milliseconds
            times.formUnion([ms - 1, ms, ms + 1, ms + 60_000, ms + 300_000])
        }
        let users = ["alice", "bob", "carol", "dave", "erin", "nobody"]
        var compared = 0
        // Every third position and every seventh time on LMDB; a sparser sample on PostgreSQL,
        // where each answer from scratch reads its events one statement at a time (the rules
        // are the same code on both: the sample checks the backend's positional reads).
        let (every, modulus): (UInt64, Int64) = storage == .lmdb ? (3, 7) : (29, 97)
        for user in users {
            for position in [nil, head, head + 5] + Array(stride(from: UInt64(0), to: head, by: Int(every))) as [UInt64?] {
                for ms in times.sorted() where ms % modulus == 0 || (position == nil && (storage == .lmdb || ms % 11 == 0)) {
                    let o = QueryOptions(position: position, asOf: Timestamp(milliseconds: ms), includeRevoked: true)
                    var s = o
                    s.fromScratch = true
                    // When answered from maintained projections and from scratch
                    // Then the answers are identical
                    #expect(try await ledger.devices(of: user, o).json == ledger.devices(of: user, s).json, "\(user) \(String(describing: position)) \(ms)")
                    #expect(try await ledger.cooling(of: user, o).json == ledger.cooling(of: user, s).json)
                    #expect(try await ledger.pending(of: user, o).json == ledger.pending(of: user, s).json)
                    compared += 1
                }
            }
        }
        #expect(compared > (storage == .lmdb ? 500 : 30))
        // And rebuilding every projection changes no answer at the head
        let asOf = t("2030-01-01T00:00:00Z")
        let before = try await users.asyncMap { try await ledger.devices(of: $0, QueryOptions(asOf: asOf, includeRevoked: true)).json }
        #expect(try await ledger.replay() == head)
        let after = try await users.asyncMap { try await ledger.devices(of: $0, QueryOptions(asOf: asOf, includeRevoked: true)).json }
        #expect(before == after)
    }

    @Test(arguments: StorageKind.all) func maintainedStateEqualsReplayedStateWhetherAppendedInOneGoOrOneByOne(_ storage: StorageKind) async throws {
        // Given every scenario appended in one request per file, and again one event per request
        let batch = try await Self.allScenarios(storage)
        let single = try await storage.freshLedger()
        for name in ScenarioFixtureTests.scenarios {
            let bytes = Array(try Data(contentsOf: Support.fixture("scenarios/\(name).jsonl")))
            for item in try EventDecoder.decodeLines(bytes, file: name) { _ = try await single.append([item.input]) }
        }
        // Then both logs hold the same events (salts are fresh in each), and each user's maintained state equals its replay from scratch
        await #expect(try batch.contentText() == single.contentText())
        let asOf = t("2030-01-01T00:00:00Z")
        for user in ["alice", "bob", "carol", "dave", "erin"] {
            let maintained = try await single.state(of: user, asOf: asOf)
            let replayed = try await single.state(of: user, asOf: asOf, fromScratch: true)
            #expect(maintained.state == replayed.state, "\(user)")
            #expect(maintained.state.version > 0)
            #expect(try await batch.state(of: user, asOf: asOf).state == replayed.state)
        }
    }

    @Test(arguments: StorageKind.all) func aPositionBeyondTheHeadMeansTheHead(_ storage: StorageKind) async throws {
        // Given a store with one event
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.phone)
        // When asked at position 1000
        let answer = try await ledger.devices(of: "alice", QueryOptions(position: 1000, asOf: t("2026-03-01T10:00:00Z"))).json
        // Then the answer reflects position 1 and holds the device
        #expect(answer["position"] == .int(1))
        #expect(answer["devices"]?.arrayValue?.count == 1)
        // And at position 0, nothing
        let empty = try await ledger.devices(of: "alice", QueryOptions(position: 0, asOf: t("2026-03-01T10:00:00Z"))).json
        #expect(empty["position"] == .int(0))
        #expect(empty["devices"]?.arrayValue?.isEmpty == true)
    }

    @Test(arguments: StorageKind.all) func expiryAndCoolingAreEvaluatedAtTheAsOfTime(_ storage: StorageKind) async throws {
        // Given a rename at 09:10 (cooling until 09:15) and a challenge expiring at 09:11
        let ledger = try await storage.freshLedger()
        try await ledger.importText([
            Self.phone,
            line("device.renamed", at: "2026-03-01T09:10:00Z", data: #"{"deviceId":"phone","name":"Phone Two"}"#),
            line("challenge.issued", at: "2026-03-01T09:10:00Z", data: #"{"challengeId":"c1","action":"login","requestingDeviceId":"new","expiresAt":"2026-03-01T09:11:00Z"}"#),
        ].joined(separator: "\n"))
        func ask(_ asOf: String) async throws -> (cooling: JSON, pending: Int, outcome: JSON?) {
            let o = QueryOptions(asOf: t(asOf))
            return (try await ledger.cooling(of: "alice", o).json, try await ledger.pending(of: "alice", o).json.arrayValue!.count,
                    try await ledger.challenge("c1", of: "alice", o).json["outcome"])
        }
        // When asked at several times, with no later event
        let a = try await ask("2026-03-01T09:10:59.999Z"), b = try await ask("2026-03-01T09:11:00Z"), c = try await ask("2026-03-01T09:15:00Z")
        // Then expiry and cooling follow the as-of time
        #expect(a.cooling["active"] == .bool(true) && a.pending == 1 && a.outcome == .string("pending"))
        #expect(b.cooling["until"] == .string("2026-03-01T09:15:00.000Z") && b.pending == 0 && b.outcome == .string("expired"))
        #expect(c.cooling["active"] == .bool(false) && c.cooling["statusCode"] == .int(100))
        // And an as-of time before the rename ignores it
        let d = try await ledger.devices(of: "alice", QueryOptions(asOf: t("2026-03-01T09:05:00Z"))).json
        #expect(d["devices"]?.arrayValue?.first?["name"] == .string("My Phone"))
        #expect(d["cooling"]?["active"] == .bool(false))
        #expect(await refusal { _ = try await ledger.challenge("c1", of: "alice", QueryOptions(asOf: t("2026-03-01T09:05:00Z"))).json }?.code == .challengeNotFound)
    }

    @Test(arguments: StorageKind.all) func aPolicyChangeAppliesFromItsPositionOn(_ storage: StorageKind) async throws {
        // Given a rename under the default cooling, then policy.set coolingSeconds 60, then a rename
        let ledger = try await storage.freshLedger()
        try await ledger.importText([
            Self.phone,
            line("device.renamed", at: "2026-03-01T09:10:00Z", data: #"{"deviceId":"phone","name":"Phone Two"}"#),
            line("policy.set", user: nil, at: "2026-03-01T09:11:00Z", data: #"{"coolingSeconds":60}"#),
        ].joined(separator: "\n"))
        // When renaming at 09:14:59 (inside the first window, which keeps its 300 s)
        let e = await refusal { try await ledger.importText(line("device.renamed", at: "2026-03-01T09:14:59Z", data: #"{"deviceId":"phone","name":"Phone Three"}"#)) }
        // Then it is refused until 09:15; at 09:15 it is accepted and opens a 60 s window
        #expect(e?.code == .coolingPeriodActive && e?.until == t("2026-03-01T09:15:00Z"))
        try await ledger.importText(line("device.renamed", at: "2026-03-01T09:15:00Z", data: #"{"deviceId":"phone","name":"Phone Three"}"#))
        let c = try await ledger.cooling(of: "alice", QueryOptions(asOf: t("2026-03-01T09:15:30Z"))).json
        #expect(c["until"] == .string("2026-03-01T09:16:00.000Z"))
        #expect(try await ledger.policy().coolingSeconds == 60)
    }
}

/// Idempotency compares content as JSON: member order is not content.
@Suite struct IdempotencyTests {
    @Test(arguments: StorageKind.all) func memberOrderOfMetaAndContextDoesNotMakeADifferentEvent(_ storage: StorageKind) async throws {
        // Given a challenge with meta and context, with an explicit id
        let id = "c0000000-0000-4000-8000-000000000001"
        let a = #"{"id":"\#(id)","type":"challenge.issued","user":"alice","at":"2026-03-01T09:00:00Z","data":{"challengeId":"c1","action":"login","requestingDeviceId":"x","expiresAt":"2026-03-01T09:01:00Z","context":{"ip":"192.0.2.1","app":"web"}},"meta":{"actor":"user","requestId":"r1"}}"#
        let ledger = try await storage.freshLedger()
        try await ledger.importText(a)
        // When the same event is appended with members in another order and the time in another zone
        let b = #"{"meta":{"requestId":"r1","actor":"user"},"data":{"context":{"app":"web","ip":"192.0.2.1"},"expiresAt":"2026-03-01T10:01:00+01:00","requestingDeviceId":"x","action":"login","challengeId":"c1"},"at":"2026-03-01T09:00:00.000999Z","user":"alice","type":"challenge.issued","id":"\#(id)"}"#
        let outcome = try await ledger.importText(b)
        // Then it is the same event: skipped
        #expect(outcome.appended.isEmpty && outcome.duplicates == 1)
        // And a different value is still a different event
        let c = a.replacingOccurrences(of: "\"web\"", with: "\"ios\"")
        #expect(await refusal { try await ledger.importText(c) }?.code == .duplicateEventId)
    }
}

/// As-of queries replay history that the rules accepted: they never refuse it again.
@Suite struct AsOfPolicyTests {
    @Test(arguments: StorageKind.all) func aPolicyRecordedWithALaterClockStillGovernsTheEventsAfterIt(_ storage: StorageKind) async throws {
        // Given policy.set coolingSeconds 0 at seq 1 — its stream's clock reads 12:00 —
        // and then alice's renames at 09:01 and 09:02, accepted under that policy
        let ledger = try await storage.freshLedger()
        try await ledger.importText([
            line("policy.set", user: nil, at: "2026-03-01T12:00:00Z", data: #"{"coolingSeconds":0}"#),
            LedgerTests.phone,
            line("device.renamed", at: "2026-03-01T09:01:00Z", data: #"{"deviceId":"phone","name":"Phone Two"}"#),
            line("device.renamed", at: "2026-03-01T09:02:00Z", data: #"{"deviceId":"phone","name":"Phone Three"}"#),
        ].joined(separator: "\n"))
        // When asked as of 11:00 (before the policy event's own time), maintained and from scratch
        for fromScratch in [false, true] {
            let o = QueryOptions(asOf: t("2026-03-01T11:00:00Z"), fromScratch: fromScratch)
            let answer = try await ledger.devices(of: "alice", o).json
            // Then the answer is the accepted history under the policy in force at each event's position
            #expect(answer["devices"]?.arrayValue?.first?["name"] == .string("Phone Three"))
            #expect(answer["cooling"]?["active"] == .bool(false))
        }
        let history = try await ledger.history("alice", QueryOptions(asOf: t("2026-03-01T11:00:00Z")))
        #expect(history.count == 3)
    }
}

/// User keys are stream keys in LMDB (bytes) and dictionary keys in memory (Swift's
/// canonical equivalence): only normal form C is accepted, so the two always agree.
@Suite struct UserKeyNormalisationTests {
    let registered = #"{"deviceId":"phone","name":"José's phone","kind":"mobile","binding":"permanent","via":"initial"}"#

    @Test(arguments: StorageKind.all) func aDecomposedUserKeyIsRefusedAndNothingIsAppended(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(line("device.registered", user: "jos\u{e9}", at: "2026-03-01T09:00:00Z", data: registered))
        let before = try await ledger.exportText()
        let decomposed = line("device.registered", user: "jose\u{301}", at: "2026-03-01T09:01:00Z", data: registered)
        await #expect(throws: LedgerError.self) { try await ledger.importText(decomposed) }
        do { try await ledger.importText(decomposed) } catch let e as LedgerError {
            #expect(e.code == .invalidEvent && e.field == "user")
        }
        await #expect(try ledger.exportText() == before)
        #expect(try await ledger.verify().seq == 1)
    }

    @Test(arguments: StorageKind.all) func commandsRefuseADecomposedUserKey(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        await #expect(throws: LedgerError.self) {
            try await ledger.perform(.access(user: "jose\u{301}", deviceId: "phone"), clock: { t("2026-03-01T09:00:00Z") })
        }
        #expect(try await ledger.head().seq == 0)
    }
}
