import AuthLedger
import Foundation
import AuthLedgerTestSupport
import Testing

@Suite(.timeLimit(.minutes(3))) struct EventStreamTests {
    /// `count` accesses of bob's phone (after its registration at seq 1).
    func seed(_ s: TestServer, accesses count: Int, from second: Int = 1) async throws {
        var items: [String] = []
        if second == 1 { items.append(Fixture.registered("bob", "phone")) }
        items += (0..<count).map { Fixture.accessed("bob", "phone", second: second + $0) }
        let r = try await s.call(.POST, "/v1/events", body: Fixture.array(items))
        #expect(r.status == 201)
    }

    @Test(arguments: StorageKind.all) func catchUpThenLive(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await seed(s, accesses: 4)
            let sub = try await s.subscribe("/v1/events?from=1")
            #expect(sub.status == 200)
            #expect(sub.contentType?.hasPrefix("text/event-stream") == true)
            var events = try await sub.waitFor(count: 5)
            #expect(events.map(\.id) == (1...5).map { UInt64($0) })
            #expect(events.first?.event == "device.registered")
            // data is the recorded event: seq = id, with its chain hash
            let first = try #require(events.first?.json)
            #expect(first["seq"] == .int(1) && first["hash"]?.stringValue?.count == 64 && first["prev"] != nil)
            // Then live
            try await seed(s, accesses: 3, from: 100)
            events = try await sub.waitFor(count: 8)
            #expect(events.map(\.id) == (1...8).map { UInt64($0) })
            sub.close()
        }
    }

    @Test(arguments: StorageKind.all) func filtersByUserAndType(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await seed(s, accesses: 2)
            try await s.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("carol", "laptop"), Fixture.accessed("carol", "laptop", second: 5)]))
            let carol = try await s.subscribe("/v1/events?from=1&user=carol")
            let regs = try await s.subscribe("/v1/events?from=1&types=device.registered")
            #expect(try await carol.waitFor(count: 2).map(\.id) == [4, 5])
            #expect(try await regs.waitFor(count: 2).map(\.id) == [1, 4])
            let bad = try await s.call(.GET, "/v1/events?types=device.exploded", token: "reader-token")
            #expect(bad.status == 400 && bad["field"] == .string("types"))
            carol.close()
            regs.close()
        }
    }

    @Test(arguments: StorageKind.all) func withoutFromOrLastEventIDItIsLiveFromTheHead(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await seed(s, accesses: 2)
            let sub = try await s.subscribe("/v1/events")
            try await seed(s, accesses: 1, from: 50)
            let events = try await sub.waitFor(count: 1)
            #expect(events.first?.id == 4)
            sub.close()
        }
    }

    @Test(arguments: StorageKind.all) func lastEventIDResumesWithoutGapOrDuplicate(_ storage: StorageKind) async throws {
        try await withServer(storage) { s in
            try await seed(s, accesses: 5)
            let first = try await s.subscribe("/v1/events?from=1")
            let seen = try await first.waitFor(count: 6)
            #expect(seen.map(\.id) == (1...6).map { UInt64($0) })
            first.close()
            // The subscriber processed up to 4 when it dropped; more arrive meanwhile
            try await seed(s, accesses: 4, from: 100)
            // Last-Event-ID wins over from
            let resumed = try await s.subscribe("/v1/events?from=1", lastEventID: 4)
            try await resumed.waitFor(count: 6)
            try await seed(s, accesses: 1, from: 200)
            let events = try await resumed.waitFor(count: 7)
            #expect(events.map(\.id) == (5...11).map { UInt64($0) })
            resumed.close()
            var bad = try await s.call(.GET, "/v1/events", token: "reader-token", headers: [("Last-Event-ID", "abc")])
            #expect(bad.status == 400)
            bad = try await s.call(.GET, "/v1/events", token: "reader-token", headers: [("Last-Event-ID", "99")])
            #expect(bad.status == 400 && bad["field"] == .string("Last-Event-ID"))
        }
    }

    @Test(arguments: StorageKind.all) func heartbeatsKeepAnIdleStreamAlive(_ storage: StorageKind) async throws {
        try await withServer(storage, configure: { $0.heartbeatInterval = .milliseconds(200) }) { s in
            let sub = try await s.subscribe("/v1/events")
            try await sub.waitUntil { $0.comments >= 3 }
            #expect(sub.events.isEmpty)
            #expect(try await s.metric("authledger_subscribers") == 1)
            sub.close()
            #expect(try await s.waitForMetric("authledger_subscribers", atMost: 0) == 0)
        }
    }

    @Test(arguments: StorageKind.all) func appendsOfAnotherProcessAreDelivered(_ storage: StorageKind) async throws {
        let cli = try #require(cliPath(), "the authledger executable is built beside the tests")
        try await withServer(storage) { s in
            try await seed(s, accesses: 1)
            let sub = try await s.subscribe("/v1/events?from=1")
            try await sub.waitFor(count: 2)
            // Another process appends to the same store
            let file = TestServer.temporaryDirectory() + "-fixture.jsonl"
            try (Fixture.accessed("bob", "phone", second: 30) + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: file) }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: cli)
            p.arguments = ["import", "--store", s.place.store, file]
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
            let events = try await sub.waitFor(count: 3)
            #expect(events.last?.id == 3)
            sub.close()
        }
    }

    @Test(arguments: StorageKind.all) func aSlowSubscriberBlocksNeitherAppendsNorOthersAndIsCutOff(_ storage: StorageKind) async throws {
        // A stall of 3 s cuts a subscriber off: long enough that the reading one is not cut when
        // a loaded machine holds the test's reader back for a second (it was cut at 1 s, load 6).
        try await withServer(storage, configure: { $0.stallTimeout = .seconds(3); $0.heartbeatInterval = .milliseconds(500) }) { s in
            try await seed(s, accesses: 0)
            // A subscriber that never reads, and one that does
            let slow = try await s.openWithoutReading("/v1/events?from=1")
            #expect(slow.status == .ok)
            let fast = try await s.subscribe("/v1/events?from=1")
            // ~20 MB of events: far beyond what socket buffers hold for the slow one
            let batches = 30, perBatch = 20
            for b in 0..<batches {
                let items = (0..<perBatch).map { Fixture.accessed("bob", "phone", second: 1 + b * perBatch + $0, padding: 32_000) }
                let r = try await s.call(.POST, "/v1/events", body: Fixture.array(items))
                #expect(r.status == 201)
            }
            let total = 1 + batches * perBatch
            let events = try await fast.waitFor(count: total, attempts: 1200)
            #expect(events.map(\.id) == (1...total).map { UInt64($0) })
            // The stalled one is cut off (it would resume with Last-Event-ID)
            let cut = try await s.waitForMetric("authledger_subscribers_cut_off_total", atLeast: 1)
            #expect(cut >= 1)
            fast.close()
            _ = slow
        }
    }

    @Test(arguments: StorageKind.all) func theSweeperExpiresChallengesForSubscribers(_ storage: StorageKind) async throws {
        let clock = TestClock()
        try await withServer(storage, clock: clock) { s in
            try await s.call(.POST, "/v1/users/alice/devices", body: #"{"deviceId":"phone","name":"Alice phone"}"#)
            let sub = try await s.subscribe("/v1/events?from=1&types=challenge.expired")
            var r = try await s.call(.POST, "/v1/users/alice/challenges", body: #"{"requestingDeviceId":"laptop"}"#)
            let cid = try #require(r["challengeId"]?.stringValue)
            clock.advance(seconds: 61)
            let expired = try #require(try await sub.waitFor(count: 1).first?.json)
            #expect(expired["data"]?["challengeId"] == .string(cid))
            #expect(expired["meta"]?["actor"] == .string("system"))
            r = try await s.call(.GET, "/v1/users/alice/challenges/\(cid)", token: "reader-token")
            #expect(r["outcome"] == .string("expired"))
            sub.close()
        }
    }

    @Test(arguments: StorageKind.all) func gracefulShutdownEndsStreamsAndKeepsEveryAcknowledgedAppend(_ storage: StorageKind) async throws {
        let s = try await TestServer.start(storage)
        defer { s.removeStore() }
        let sub = try await s.subscribe("/v1/events?from=1")
        // Appends racing the shutdown: each one acknowledged must be in the log
        let acknowledged = Task {
            await withTaskGroup(of: Int?.self) { group in
                for k in 0..<20 {
                    group.addTask {
                        let r = try? await s.call(.POST, "/v1/events", body: Fixture.array([Fixture.registered("user\(k)", "phone")]))
                        return r?.status == 201 ? k : nil
                    }
                }
                var ok: [Int] = []
                for await k in group { if let k { ok.append(k) } }
                return ok
            }
        }
        try await Task.sleep(for: .milliseconds(20))
        try await s.stop()
        let ok = await acknowledged.value
        try await sub.waitUntil { $0.isFinished }
        let ledger = try await s.place.open()
        let users = Set(try await ledger.events(from: 1).compactMap(\.event.user))
        for k in ok { #expect(users.contains("user\(k)")) }
    }
}

/// The `authledger` executable of this build, next to the test bundle.
func cliPath() -> String? {
    var candidates: [URL] = [Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("authledger")]
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    candidates.append(root.appendingPathComponent(".build/debug/authledger"))
    return candidates.map(\.path).first { FileManager.default.isExecutableFile(atPath: $0) }
}
