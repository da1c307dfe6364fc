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
    final class ThreadSpy: StorageBackend {
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

    /// The synchronous `perform`, also from an async test (where the async one would be chosen).
    static func performSync(_ ledger: Ledger, _ command: Command, clock: @escaping @Sendable () -> Timestamp = Timestamp.now) throws -> CommandResult {
        try ledger.performBlocking(command, clock: clock)
    }

    @Test func everyWriteOfTheSyncAndAsyncAPIRunsOnTheWriterThread() async throws {
        let path = Support.tempDir("writer-thread")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let spy = ThreadSpy(try LMDBStorage(path: path))
        let ledger = try Ledger(storage: spy, path: path)
        spy.writer.withLock { $0 = ledger.writer }
        let at = t("2026-03-01T09:00:00Z")
        // The synchronous API, from this (test) thread
        _ = try ledger.appendBlocking(try inputs(line("device.registered", at: "2026-03-01T09:00:00Z",
                                              data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)))
        let c = try Self.performSync(ledger, .issueChallenge(user: "alice", requestingDeviceId: "tablet", action: "login", context: nil), clock: { at })
        _ = try ledger.expireDueChallengesBlocking(now: at.adding(seconds: 3600))
        _ = try ledger.replayBlocking()
        _ = try ledger.eraseBlocking("alice", now: at.adding(seconds: 7200))
        // and the asynchronous one
        _ = try await ledger.perform(.setPolicy(PolicySet(coolingSeconds: 0)))
        #expect(c.challengeId != nil)
        let onWriter = spy.onWriter.withLock { $0 }
        #expect(onWriter.count >= 7, "\(onWriter)")
        #expect(onWriter.allSatisfy { $0 }, "\(onWriter)")
    }

    /// A commit observer runs on the writer thread; a synchronous write it makes runs at
    /// once instead of waiting for the thread it is on (which would never come).
    @Test func aSyncWriteFromTheWriterThreadRunsInline() throws {
        let path = Support.tempDir("writer-inline")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ledger = try Ledger(lmdb: path)
        let once = Mutex(false)
        _ = ledger.addCommitObserver { head in
            guard head.seq == 1, once.withLock({ let first = !$0; $0 = true; return first }) else { return }
            _ = try? ledger.appendBlocking(try! inputs(line("device.accessed", at: "2026-03-01T09:01:00Z", data: #"{"deviceId":"phone"}"#)))
        }
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? ledger.appendBlocking(try! inputs(line("device.registered", at: "2026-03-01T09:00:00Z",
                                                    data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)))
            finished.signal()
        }
        // A deadlock would never signal: fail after a generous wait instead of hanging the suite.
        #expect(finished.wait(timeout: .now() + 60) == .success)
        #expect(try ledger.headBlocking().seq == 2)
    }

    /// Synchronous and asynchronous writers from many threads at once: one gap-free log.
    @Test func syncAndAsyncWritersInterleaveIntoOneChain() async throws {
        let path = Support.tempDir("writer-mixed")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ledger = try Ledger(lmdb: path)
        let n = 40
        await withTaskGroup(of: Void.self) { group in
            for k in 0..<n {
                group.addTask {
                    let user = "u\(k)"
                    let reg = Command.register(Registration(user: user, deviceId: "d", name: "Device \(k)"))
                    if k % 2 == 0 { _ = try? Self.performSync(ledger, reg) } else { _ = try? await ledger.perform(reg) }
                }
            }
        }
        #expect(try ledger.headBlocking().seq == UInt64(n))
        try ledger.verify()
    }
}
