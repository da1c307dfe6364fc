@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import AuthLedgerTestSupport
import Foundation
import Synchronization
import Testing

/// Every write of a ledger — the synchronous API's included — runs on its one writer
/// thread: a store spy records the thread of every write transaction.
@Suite struct WriterThreadTests {
    /// Passes everything to an LMDB store, noting which thread opened each write.
    final class ThreadSpy: InPlaceStorage, PipelinedCommits {
        let inner: LMDBStorage
        /// For each write: whether it ran on the ledger's writer thread.
        let onWriter = Mutex<[Bool]>([])
        let writer = Mutex<Writer?>(nil)
        init(_ inner: LMDBStorage) { self.inner = inner }
        func note() {
            let w = writer.withLock { $0 }
            let on = w?.isCurrentThread ?? false
            onWriter.withLock { $0.append(on) }
        }
        func read<T>(_ body: (any StorageReader) throws -> T) throws -> T { try inner.read(body) }
        func write<T>(_ body: (any StorageWriter) throws -> T) throws -> T { note(); return try inner.write(body) }
        func purgeDeleted() throws { note(); try inner.purgeDeleted() }
        func writePipelined<T>(_ body: (any StorageWriter) throws -> T) throws -> (value: T, durable: Bool, synced: Bool) {
            note()
            return try inner.writePipelined(body)
        }
        func sync() throws { try inner.sync() }
    }

    @Test func everyWriteRunsOnTheWriterThread() async throws {
        let path = Support.tempDir("writer-thread")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let spy = ThreadSpy(try LMDBStorage(path: path))
        let ledger = try await Ledger(storage: spy, path: path)
        spy.writer.withLock { $0 = ledger.writer }
        let at = t("2026-03-01T09:00:00Z")
        _ = try await ledger.append(try inputs(line("device.registered", at: "2026-03-01T09:00:00Z",
                                                    data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)))
        let c = try await ledger.perform(.issueChallenge(user: "alice", requestingDeviceId: "tablet", action: "login", context: nil), clock: { at })
        _ = try await ledger.expireDueChallenges(now: at.adding(seconds: 3600))
        _ = try await ledger.replay()
        _ = try await ledger.erase("alice", now: at.adding(seconds: 7200))
        _ = try await ledger.perform(.setPolicy(PolicySet(coolingSeconds: 0)))
        #expect(c.challengeId != nil)
        let onWriter = spy.onWriter.withLock { $0 }
        #expect(onWriter.count >= 7, "\(onWriter)")
        #expect(onWriter.allSatisfy { $0 }, "\(onWriter)")
    }

    /// A commit observer runs on the writer thread; a write it starts is committed after it
    /// returns instead of waiting for the thread it is on (which would never come).
    @Test(.timeLimit(.minutes(1))) func aWriteStartedByACommitObserverIsCommitted() async throws {
        let path = Support.tempDir("writer-inline")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ledger = try await Ledger(lmdb: path)
        let once = Mutex(false)
        let (written, wrote) = AsyncStream.makeStream(of: Bool.self)
        _ = ledger.addCommitObserver { head in
            guard head.seq == 1, once.withLock({ let first = !$0; $0 = true; return first }) else { return }
            Task {
                let ok = (try? await ledger.append(try! inputs(line("device.accessed", at: "2026-03-01T09:01:00Z", data: #"{"deviceId":"phone"}"#)))) != nil
                wrote.yield(ok)
            }
        }
        _ = try await ledger.append(try inputs(line("device.registered", at: "2026-03-01T09:00:00Z",
                                                    data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)))
        var observed: Bool?
        for await ok in written { observed = ok; break }
        #expect(observed == true)
        #expect(try await ledger.head().seq == 2)
    }

    /// Commands and appends from many tasks at once: one gap-free log.
    @Test func commandsAndAppendsInterleaveIntoOneChain() async throws {
        let path = Support.tempDir("writer-mixed")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ledger = try await Ledger(lmdb: path)
        let n = 40
        await withTaskGroup(of: Void.self) { group in
            for k in 0..<n {
                group.addTask {
                    let user = "u\(k)"
                    let reg = Command.register(Registration(user: user, deviceId: "d", name: "Device \(k)"))
                    if k % 2 == 0 {
                        _ = try? await ledger.append(try! inputs(line("device.registered", user: user, at: "2026-03-01T09:00:00Z",
                            data: #"{"deviceId":"d","name":"Device","kind":"mobile","binding":"permanent","via":"initial"}"#)))
                    } else {
                        _ = try? await ledger.perform(reg)
                    }
                }
            }
        }
        #expect(try await ledger.head().seq == UInt64(n))
        try await ledger.verify()
    }
}
