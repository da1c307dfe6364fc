import Foundation
import LMDB
import AuthLedgerTestSupport
import Testing
@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerCore

/// Hardening: input bounds, far-future times, group-commit isolation of any failure,
/// refused batches, filtered catch-up, the server key, stale readers and garbage stores.
@Suite struct HardeningTests {
    static let register = line("device.registered", at: "2026-03-01T09:00:00Z",
                               data: #"{"deviceId":"iphone","name":"Alice iPhone","kind":"mobile","binding":"permanent","via":"initial"}"#)

    // MARK: Far-future and out-of-range times (SPEC 2.1)

    @Test(arguments: StorageKind.all) func aFarFutureRevokeAllSaturatesTheCoolingWindowAndTheUserStillAnswers(_ storage: StorageKind) async throws {
        // Given a user whose every device is revoked two minutes before the end of year 9999
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.register + "\n" + line("device.all_revoked", at: "9999-12-31T23:58:00Z", data: "{}"))
        // Then the cooling window ends at the last writable time, not beyond it
        let asOf = t("9999-12-31T23:59:00Z")
        let cooling = try await ledger.cooling(of: "alice", QueryOptions(asOf: asOf)).json
        #expect(cooling["until"]?.stringValue == "9999-12-31T23:59:59.999Z")
        #expect(cooling["active"] == .bool(true))
        // And the devices answer, from the maintained projection and from scratch, and verify passes
        #expect(try await ledger.devices(of: "alice", QueryOptions(asOf: asOf, includeRevoked: true)).json["devices"]?.arrayValue?.count == 1)
        #expect(try await ledger.devices(of: "alice", QueryOptions(asOf: asOf, includeRevoked: true, fromScratch: true)).json["devices"]?.arrayValue?.count == 1)
        #expect(try await ledger.verify().seq == 2)
    }

    @Test func derivedTimesSaturateAtTheLastWritableTime() {
        #expect(Timestamp.max.adding(seconds: 1) == .max)
        #expect(t("9999-12-31T23:58:00Z").adding(seconds: 300) == .max)
        #expect(t("9999-12-31T23:58:00Z").adding(seconds: 60).formatted == "9999-12-31T23:59:00.000Z")
    }

    @Test(arguments: ["1969-12-31T23:59:59.999Z", "0001-01-01T00:00:00Z", "1900-01-01T00:00:00+01:00"], StorageKind.all)
    func eventTimesBefore1970AreInvalidEvents(_ at: String, _ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let bad = line("device.registered", at: at,
                       data: #"{"deviceId":"iphone","name":"Alice iPhone","kind":"mobile","binding":"permanent","via":"initial"}"#)
        #expect(await refusal { try await ledger.importText(bad) }?.code == .invalidEvent)
        let expiry = line("challenge.issued", at: "2026-03-01T09:00:00Z",
                          data: #"{"challengeId":"c1","action":"login","requestingDeviceId":"d","expiresAt":"\#(at)"}"#)
        #expect(await refusal { try await ledger.importText(expiry) }?.code == .invalidEvent)
        #expect(try await ledger.head().seq == 0)
        #expect(Timestamp(callerTime: at) == nil)
        #expect(Timestamp(callerTime: "1970-01-01T00:00:00Z") == .epoch)
    }

    // MARK: Group commit: isolation of any failure, refused batches

    /// Blocks the writer until `count` more jobs are queued, so they share one transaction.
    func holdWriter(_ ledger: Ledger, untilQueued count: Int, _ enqueue: () -> Void) {
        let release = DispatchSemaphore(value: 0), blocked = DispatchSemaphore(value: 0)
        ledger.writer.submit({ _ in blocked.signal(); release.wait(); return 0 }, done: { _ in })
        blocked.wait()
        enqueue()
        while ledger.writer.queuedCount < count { usleep(1000) }
        release.signal()
    }

    struct Unexpected: Error {}

    @Test(arguments: StorageKind.all) func anyFailureOfOneRequestInABusyBatchFailsOnlyThatRequest(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.register)
        let results = Results()
        let group = DispatchGroup()
        holdWriter(ledger, untilQueued: 21) {
            for k in 0..<21 {
                group.enter()
                if k == 10 {
                    // Writes an event, then fails with an error that is not a refusal
                    ledger.writer.submit({ session in
                        var checked = Set<String>()
                        _ = try session.append(try inputs(line("device.accessed", at: "2026-03-01T10:10:30Z", data: #"{"deviceId":"iphone"}"#))[0],
                                               checked: &checked)
                        throw Unexpected()
                    }, done: { r in results.set(k, r); group.leave() })
                } else {
                    let e = try! inputs(line("device.accessed", at: "2026-03-01T10:\(String(format: "%02d", k)):00Z", data: #"{"deviceId":"iphone"}"#))
                    ledger.writer.submit({ session in try session.applyUnisolated(AppendRequest(e)).appended.count },
                                         done: { r in results.set(k, r); group.leave() })
                }
            }
        }
        group.wait()
        // Then the 20 others were committed, and the failing one answered alone, its event rolled back
        let all = results.all
        #expect(all.filter { if case .success = $0.value { true } else { false } }.count == 20)
        if case let .failure(e as LedgerError)? = all[10] { #expect(e.code == .storageError) } else { Issue.record("\(String(describing: all[10]))") }
        #expect(try await ledger.head().seq == 21)
        #expect(!(try await ledger.events()).contains { $0.event.at == t("2026-03-01T10:10:30Z") })
        #expect(try await ledger.verify().seq == 21)
    }

    // LMDB only: it reads the LMDB environment's last transaction id.
    @Test func aBatchWhoseEveryRequestIsRefusedDoesNotCommit() async throws {
        let ledger = try await Support.freshLedger()
        try await ledger.importText(Self.register)
        let env = try #require(ledger.storage as? LMDBStorage).environment
        let before = env.lastTransactionID
        // When only refused requests share a transaction
        await #expect(throws: LedgerError.self) {
            _ = try await ledger.perform(.access(user: "alice", deviceId: "ghost"))
        }
        await #expect(throws: LedgerError.self) {
            _ = try await ledger.append(AppendRequest(try inputs(line("device.accessed", at: "2020-01-01T00:00:00Z", data: #"{"deviceId":"iphone"}"#))))
        }
        // Then no transaction was committed for them
        #expect(env.lastTransactionID == before)
        _ = try await ledger.perform(.access(user: "alice", deviceId: "iphone"), clock: { t("2026-03-01T10:00:00Z") })
        #expect(env.lastTransactionID == before + 1)
    }

    @Test(arguments: ["", "$nobody", "bad\u{1}key"], StorageKind.all)
    func expectedVersionKeysThatCannotBeStreamsAreInvalid(_ key: String, _ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let e = try inputs(Self.register)
        do {
            _ = try await ledger.append(AppendRequest(e, expectedVersions: [key: 0]))
            Issue.record("an expected version for \(key) was accepted")
        } catch let error as LedgerError {
            #expect(error.code == .invalidEvent && error.field == "expectedVersion")
        }
        #expect(try await ledger.head().seq == 0)
        // $system itself is a stream
        _ = try await ledger.append(AppendRequest(e, expectedVersions: ["$system": 0]))
    }

    // MARK: Event feed

    @Test(arguments: StorageKind.all) func aFilteredCatchUpReadsPastEmptyPagesWithoutWaiting(_ storage: StorageKind) async throws {
        // Given 5,000 events that do not match a filter, then one that does
        let ledger = try await storage.freshLedger()
        var text = [Self.register]
        for k in 0..<5_000 {
            let at = t("2026-03-01T10:00:00Z").adding(seconds: Int64(k)).formatted
            text.append(line("device.accessed", at: at, data: #"{"deviceId":"iphone"}"#))
        }
        text.append(line("device.renamed", at: "2026-03-02T10:00:00Z", data: #"{"deviceId":"iphone","name":"New name"}"#))
        try await ledger.importText(text.joined(separator: "\n"))
        // When a feed filtered on renames catches up, with a poll interval far longer than its idle wait
        let feed = try await ledger.events(from: 1, filter: EventFilter(types: [.renamed]), pollInterval: .seconds(3600))
        var it = feed.makeAsyncIterator()
        // Then the rename is found at once: empty pages short of the head are no reason to wait
        let e = try await it.next(idle: .seconds(2))
        #expect(e?.event.type == .renamed)
    }

    // MARK: The server key

    @Test func anEmptyServerKeyLeftByACrashIsReplacedNotFatal() async throws {
        // Given a store whose server.key creation was interrupted (an empty file)
        let dir = Support.tempDir()
        let ledger = try await Ledger(lmdb: dir)
        #expect(FileManager.default.createFile(atPath: dir + "/server.key", contents: Data()))
        // Then OTPs still work, under a whole new key, and no temporary file is left
        let sent = try await ledger.perform(.sendOTP(user: "alice", channel: "email", target: "alice@example.com"), clock: { t("2026-03-01T09:00:00Z") })
        #expect(sent.otpId != nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/server.key")).count == 32)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir)
        // (compaction.lock is the store's: it coordinates the rewrite after an erasure)
        #expect(Set(files) == ["data.mdb", "lock.mdb", "compaction.lock", "server.key"], "\(files)")
        // And a second process (a new ledger) reads the same key
        let again = try OTPSecrets.loadOrCreate(path: dir + "/server.key")
        #expect(again.codeHash(user: "a", otpId: "o", code: "1") == (try ledger.secrets()).codeHash(user: "a", otpId: "o", code: "1"))
    }

    // MARK: Garbage stores, stale readers

    @Test func aGarbageStoreFileIsAClearStorageErrorForTheLibraryAndTheCLI() async throws {
        let dir = Support.tempDir()
        var g = SystemRandomNumberGenerator()
        let junk = (0..<65_536).map { _ in UInt8.random(in: 0...255, using: &g) }
        #expect(FileManager.default.createFile(atPath: dir + "/data.mdb", contents: Data(junk)))
        let e = await refusal { _ = try await Ledger(lmdb: dir) }
        #expect(e?.code == .storageError)
        #expect(e?.message.hasPrefix("cannot open the store") == true, "\(String(describing: e))")
        let r = try Rig.cli(["devices", "alice", "--store", dir])
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: storage_error: cannot open the store"), "\(r.stderr)")
        #expect(!r.stderr.contains(dir))
    }

    @Test func exportHoldsNoReadTransactionWhileItsReaderIsNotReading() async throws {
        // Given a store larger than a pipe's buffer
        let dir = Support.tempDir()
        let ledger = try await Ledger(lmdb: dir)
        var text = [Self.register]
        for k in 0..<3_000 {
            let at = t("2026-03-01T10:00:00Z").adding(seconds: Int64(k)).formatted
            text.append(line("device.accessed", at: at, data: #"{"deviceId":"iphone"}"#))
        }
        try await ledger.importText(text.joined(separator: "\n"))
        // When `authledger export` writes to a pipe nobody reads
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try Rig.binary())
        p.arguments = ["export", "--store", dir]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer {
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
        }
        // (blocked in a write to the pipe: the kernel says so, of one of its threads — the
        // command runs on Swift's cooperative pool, not on the main thread)
        var blocked = false
        let tasks = "/proc/\(p.processIdentifier)/task"
        for _ in 0..<600 where !blocked {
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []
            blocked = threads.contains { t in
                let wchan = (try? String(contentsOfFile: "\(tasks)/\(t)/wchan", encoding: .utf8)) ?? ""
                return wchan.contains("pipe_write") || wchan.contains("pipe_wait")
            }
            if !blocked { usleep(10_000) }
        }
        try #require(blocked, "export never blocked on its pipe")
        // Then it holds no reader slot (it used to hold its read transaction, pinning old pages)
        let env = try #require(ledger.storage as? LMDBStorage).environment
        #expect(!env.readerProcesses().contains(p.processIdentifier))
        // And once killed there, nothing stale is left for the reader check to clear
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        #expect(try ledger.clearStaleReaders() == 0)
    }
}

final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int: Result<any Sendable, Error>] = [:]
    func set(_ k: Int, _ r: Result<any Sendable, Error>) { lock.withLock { values[k] = r } }
    var all: [Int: Result<any Sendable, Error>] { lock.withLock { values } }
}

/// Prefixes are judged by Unicode scalars, as openapi.yaml's patterns state them.
@Suite struct ScalarPrefixTests {
    @Test func anActorWhoseNameStartsWithAModifierIsStillAnAdminActor() {
        // ":" + U+1F3FB (an emoji modifier) is one grapheme cluster: hasPrefix("admin:") missed it
        #expect(EventDecoder.isValidActor("admin:\u{1F3FB}ops"))
        #expect(EventDecoder.isValidActor("device:e\u{301}"))
        #expect(!EventDecoder.isValidActor("admin:"))
        #expect(!EventDecoder.isValidActor("admin"))
    }

    @Test func aUserKeyStartingWithDollarAndACombiningMarkIsReserved() {
        #expect(throws: LedgerError.self) { try EventDecoder.checkUser("$\u{301}x") }
        #expect(throws: LedgerError.self) { try EventDecoder.checkUser("$system") }
    }
}
