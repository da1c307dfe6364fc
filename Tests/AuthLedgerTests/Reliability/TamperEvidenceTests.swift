import Foundation
@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerCore
import LMDB
import Synchronization
import AuthLedgerTestSupport
import Testing

/// Tamper evidence: an attacker with write access to the store files changes, deletes,
/// swaps or inserts events (through LMDB, or by flipping bytes of data.mdb), or edits
/// an export. `verify` must name the first bad seq every time, and an edited export
/// must be refused on import with `chain_mismatch`. The attacks on the files are LMDB's
/// (they write its databases and bytes); the edited exports run on every backend.
@Suite struct TamperEvidenceTests {
    /// A store holding `Rig.baseFixture` (10 events).
    static func populated(_ storage: StorageKind = .lmdb) async throws -> String {
        let store = try Rig.store(storage, "tamper")
        let ledger = try await Ledger(store: store)
        _ = try await ledger.append(try EventDecoder.decodeLines(Array(Rig.baseFixture.utf8)).map(\.input))
        return store
    }

    /// Rewrites the raw `events` database of the store like an attacker with file access would.
    static func tamper(_ store: String, _ body: (Transaction, Database) throws -> Void) throws {
        let env = try Environment(path: store)
        let events = try env.database("events")
        try env.write { txn in try body(txn, events) }
    }

    static func value(_ txn: Transaction, _ db: Database, _ seq: UInt64) throws -> [UInt8] {
        try #require(try txn.get(db, seq.bigEndianBytes))
    }

    /// The seq `verify` names, or nil when it passes.
    static func verifyNames(_ store: String) async throws -> UInt64? {
        do {
            try await Ledger(lmdb: store).verify()
            return nil
        } catch let e as LedgerError {
            #expect(e.code == .tampered)
            return e.seq
        }
    }

    static func decoded(_ bytes: [UInt8], _ seq: UInt64) throws -> RecordedEvent {
        try bytes.withUnsafeBytes { try EventCodec.decode($0, seq: seq) }
    }

    @Test(arguments: [1, 4, 10] as [UInt64])
    func changedContentIsNamed(seq: UInt64) async throws {
        // Given a populated store, when one event's content is changed in place (hash left as it was)
        let store = try await Self.populated()
        try Self.tamper(store) { txn, db in
            var r = try Self.decoded(try Self.value(txn, db, seq), seq)
            r.event.at = r.event.at.adding(seconds: -1)
            try txn.put(db, seq.bigEndianBytes, EventCodec.encode(r))
        }
        // Then verify names exactly that seq
        await #expect(try Self.verifyNames(store) == seq)
    }

    @Test(arguments: [2, 6, 9] as [UInt64])
    func aConsistentlyRehashedEventIsNamedByItsSuccessor(seq: UInt64) async throws {
        // Given an attacker who re-hashes the changed event but cannot afford to rewrite the rest
        let store = try await Self.populated()
        try Self.tamper(store) { txn, db in
            var r = try Self.decoded(try Self.value(txn, db, seq), seq)
            r.event.meta = StringMap([("actor", "admin:mallory")])
            r.hash = RecordedEvent.computeHash(r.event, seq: seq, version: r.version, prev: r.prev)
            try txn.put(db, seq.bigEndianBytes, EventCodec.encode(r))
        }
        // Then the next event no longer links to it
        await #expect(try Self.verifyNames(store) == seq + 1)
    }

    @Test(arguments: [1, 5, 10] as [UInt64])
    func aDeletedEventIsNamed(seq: UInt64) async throws {
        let store = try await Self.populated()
        try Self.tamper(store) { txn, db in _ = try txn.delete(db, seq.bigEndianBytes) }
        await #expect(try Self.verifyNames(store) == seq)
    }

    @Test func verifyRunsLMDBsChecksThroughTheRunnerItIsGiven() async throws {
        // Given a populated store and a runner that counts the work handed to it
        let store = try await Self.populated()
        let runner = CountingRunner()
        // When it is verified through the runner, then the checks ran there once, and pass
        let ledger = try await Ledger(lmdb: store)
        #expect(try await ledger.verify(on: runner).seq == 10)
        await ledger.close()
        #expect(runner.counts == (runs: 1, bodies: 1))
        // And when an event was changed, the checks run there still name it
        try Self.tamper(store) { txn, db in
            var r = try Self.decoded(try Self.value(txn, db, 4), 4)
            r.event.at = r.event.at.adding(seconds: -1)
            try txn.put(db, UInt64(4).bigEndianBytes, EventCodec.encode(r))
        }
        let tampered = try await Ledger(lmdb: store)
        let error = await #expect(throws: LedgerError.self) { try await tampered.verify(on: runner) }
        await tampered.close()
        #expect(error?.code == .tampered && error?.seq == 4)
        #expect(runner.counts == (runs: 2, bodies: 2))
    }

    @Test(arguments: [1, 3, 9] as [UInt64])
    func swappedEventsAreNamed(seq: UInt64) async throws {
        let store = try await Self.populated()
        try Self.tamper(store) { txn, db in
            let a = try Self.value(txn, db, seq), b = try Self.value(txn, db, seq + 1)
            try txn.put(db, seq.bigEndianBytes, b)
            try txn.put(db, (seq + 1).bigEndianBytes, a)
        }
        await #expect(try Self.verifyNames(store) == seq)
    }

    @Test(arguments: [1, 7] as [UInt64])
    func anEventInsertedInTheMiddleIsNamed(seq: UInt64) async throws {
        // Given the events from seq on moved up by one, and a forged event put at seq
        let store = try await Self.populated()
        try Self.tamper(store) { txn, db in
            for s in stride(from: UInt64(10), through: seq, by: -1) {
                try txn.put(db, (s + 1).bigEndianBytes, try Self.value(txn, db, s))
            }
            var forged = try Self.decoded(try Self.value(txn, db, seq), seq)
            forged.event.id = .random()
            forged.hash = RecordedEvent.computeHash(forged.event, seq: seq, version: forged.version, prev: forged.prev)
            try txn.put(db, seq.bigEndianBytes, EventCodec.encode(forged))
        }
        await #expect(try Self.verifyNames(store) == seq)
    }

    @Test func anEventAppendedBehindTheHeadIsNamed() async throws {
        // Given a well-chained event appended to the events database without moving the head or indexes
        let store = try await Self.populated()
        try Self.tamper(store) { txn, db in
            let last = try Self.decoded(try Self.value(txn, db, 10), 10)
            var extra = last
            extra.event.id = .random()
            extra.event.at = last.event.at.adding(seconds: 1)
            extra.version = last.version + 1
            extra.prev = last.hash
            extra.hash = RecordedEvent.computeHash(extra.event, seq: 11, version: extra.version, prev: extra.prev)
            try txn.put(db, UInt64(11).bigEndianBytes, EventCodec.encode(extra))
        }
        await #expect(try Self.verifyNames(store) == 11)
    }

    @Test func aTruncatedLogIsNamed() async throws {
        let store = try await Self.populated()
        try Self.tamper(store) { txn, db in _ = try txn.delete(db, UInt64(10).bigEndianBytes) }
        await #expect(try Self.verifyNames(store) == 10)
    }

    @Test func everyByteFlipInAStoredEventIsNamed() async throws {
        // Given, for two stored events (one with meta and personal values, and the last one),
        // every byte flipped in turn with several masks (and put back after each check)
        let masks: [UInt8] = [0x01, 0x02, 0x1E, 0x80, 0xFF]
        var escaped: [String] = []
        var flips = 0
        for seq in [UInt64(2), 10] {
            let store = try await Self.populated()
            var original: [UInt8] = []
            try Self.tamper(store) { txn, db in original = try Self.value(txn, db, seq) }
            for i in 0..<original.count {
                for mask in masks {
                    var flipped = original
                    flipped[i] ^= mask
                    try Self.tamper(store) { txn, db in try txn.put(db, seq.bigEndianBytes, flipped) }
                    // Then verify names that seq (undecodable, a broken link or a wrong hash):
                    // every stored event has exactly one encoding
                    if try await Self.verifyNames(store) != seq { escaped.append("seq \(seq) byte \(i) ^ \(mask)") }
                    flips += 1
                }
            }
            try Self.tamper(store) { txn, db in try txn.put(db, seq.bigEndianBytes, original) }
            await #expect(try Self.verifyNames(store) == nil)
        }
        #expect(flips > 1_000)
        #expect(escaped.isEmpty, "\(escaped.count) flips passed verify: \(escaped.prefix(20))")
    }

    @Test func storedBytesWithAHugeLengthAreNamedNotACrash() async throws {
        // Given event 2 replaced by the fuzzer's find: a map count beyond Int.max (it used to trap)
        let store = try await Self.populated()
        let found = Array(try #require(FileManager.default.contents(
            atPath: Rig.root.appendingPathComponent("Fuzz/corpus/stored-event/regression-map-count-overflow").path)))
        try Self.tamper(store) { txn, db in try txn.put(db, UInt64(2).bigEndianBytes, found) }
        // Then verify names seq 2, and reading the log refuses with tampered instead of stopping the process
        await #expect(try Self.verifyNames(store) == 2)
        await #expect(throws: LedgerError.self) { try await Ledger(lmdb: store).events() }
    }

    @Test(arguments: [Int64.min / 2, -62_167_219_200_001, 253_402_300_800_000, Int64.max])
    func aStoredTimeOutsideRFC3339IsNamedNotACrash(milliseconds: Int64) async throws {
        // Given event 3 stored with a time no RFC 3339 text can write (formatting it used to trap)
        let store = try await Self.populated()
        try Self.tamper(store) { txn, db in
            var r = try Self.decoded(try Self.value(txn, db, 3), 3)
            r.event.at = Timestamp(milliseconds: milliseconds)
            try txn.put(db, UInt64(3).bigEndianBytes, EventCodec.encode(r))
        }
        await #expect(try Self.verifyNames(store) == 3)
        await #expect(throws: LedgerError.self) { try await Ledger(lmdb: store).events() }
    }

    @Test func editingDataMdbOnDiskIsNamed() async throws {
        // Given a store whose event 2 carries a marker that only the event holds
        let store = try await Self.populated()
        let path = store + "/data.mdb"
        var bytes = Array(try #require(FileManager.default.contents(atPath: path)))
        let marker = Array("REQ-TAMPER-0001".utf8)
        var hits = 0
        var i = 0
        while i + marker.count <= bytes.count {
            if bytes[i] == marker[0] && Array(bytes[i..<(i + marker.count)]) == marker {
                bytes[i + marker.count - 1] = UInt8(ascii: "9")
                hits += 1
            }
            i += 1
        }
        #expect(hits >= 1)
        // When the file is edited with the store closed
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        // Then verify names seq 2
        await #expect(try Self.verifyNames(store) == 2)
    }

    // MARK: Maintained projections

    /// Rewrites one maintained projection state (what queries at the head answer from).
    static func tamperState(_ store: String, _ key: String, _ edit: (inout UserState) -> Void) throws {
        let env = try Environment(path: store)
        let streams = try env.database("streams")
        try env.write { txn in
            let bytes = try #require(try txn.get(streams, stateKey(key)))
            var s = try bytes.withUnsafeBytes { try StateCodec.decode($0, user: key) }
            edit(&s)
            try txn.put(streams, stateKey(key), StateCodec.encode(s))
        }
    }

    /// Where the store keeps a user's projection state: its `streams` entry after its index entries.
    static func stateKey(_ user: String) -> [UInt8] { Array(user.utf8) + [0] + UInt64.max.bigEndianBytes }

    @Test func aRevokedDeviceReactivatedInTheProjectionIsNamed() async throws {
        // Given bob's revoked phone marked active again in his maintained projection (the log untouched)
        let store = try await Self.populated()
        try Self.tamperState(store, "bob") { $0.devices["pixel"]?.status = .active }
        let before = try await Ledger(lmdb: store).devices(of: "bob", QueryOptions(asOf: .max)).json
        #expect(before["devices"]?.arrayValue?.count == 1, "the tampered projection is what queries answer from")
        // Then verify names bob's last event, seq 10
        await #expect(try Self.verifyNames(store) == 10)
    }

    @Test func aProjectionForAUserWithoutEventsIsNamed() async throws {
        let store = try await Self.populated()
        let env = try Environment(path: store)
        let streams = try env.database("streams")
        var ghost = UserState(user: "mallory")
        ghost.devices["evil"] = DeviceRecord(deviceId: "evil", status: .active)
        try env.write { txn in try txn.put(streams, Self.stateKey("mallory"), StateCodec.encode(ghost)) }
        await #expect(try Self.verifyNames(store) == 11)
    }

    // MARK: Exports

    static func exportLines(_ store: String) async throws -> [String] {
        try await Ledger(store: store).events().map { $0.json.serialized() }
    }

    static func importRefusal(_ lines: [String], _ storage: StorageKind) async throws -> LedgerError? {
        let fresh = try Rig.store(storage, "tamper-import")
        do {
            let decoded = try EventDecoder.decodeLines(Array(lines.joined(separator: "\n").utf8))
            do {
                _ = try await Ledger(store: fresh).append(decoded.map(\.input))
            } catch var e as LedgerError {
                if let i = e.index { e = e.at(file: nil, line: decoded[i].line) }
                throw e
            }
            return nil
        } catch let e as LedgerError {
            return e
        }
    }

    @Test(arguments: StorageKind.all) func anUntouchedExportImportsIntoAFreshStore(_ storage: StorageKind) async throws {
        let lines = try await Self.exportLines(try await Self.populated(storage))
        await #expect(try Self.importRefusal(lines, storage) == nil)
    }

    @Test(arguments: ["change", "delete", "swap", "insert", "rehash"], StorageKind.all)
    func anEditedExportIsRefusedWithChainMismatch(edit: String, storage: StorageKind) async throws {
        // Given an export of the populated store
        let store = try await Self.populated(storage)
        var lines = try await Self.exportLines(store)
        let k = 4  // 0-based: the event at seq 5, line 5
        switch edit {
        case "change": lines[k] = lines[k].replacingOccurrences(of: "2026-03-01T09:10:30.000Z", with: "2026-03-01T09:10:31.000Z")
        case "delete": lines.remove(at: k)
        case "swap": lines.swapAt(k, k + 1)
        case "insert":
            // A forged event (a fresh id) claiming the position of seq 5.
            let original = try EventDecoder.decode(line: Array(lines[k].utf8))
            lines.insert(lines[k].replacingOccurrences(of: original.event.id!.description, with: EventID.random().description), at: k)
        default:
            // Content and hash recomputed for the edited line; its successor still names the old hash.
            let decoded = try EventDecoder.decode(line: Array(lines[k].utf8))
            var e = decoded.event
            e.meta = StringMap([("actor", "admin:mallory")])
            let rec = RecordedEvent(event: e, seq: 5, version: decoded.claims.version!, prev: decoded.claims.prev!,
                                    hash: RecordedEvent.computeHash(e, seq: 5, version: decoded.claims.version!, prev: decoded.claims.prev!))
            lines[k] = rec.json.serialized()
        }
        await #expect(lines.joined() != (try Self.exportLines(store)).joined())
        // When it is imported into a fresh store, then it is refused with chain_mismatch at the first bad line
        let refusal = try await #require(try Self.importRefusal(lines, storage))
        #expect(refusal.code == .chainMismatch, "\(edit): \(refusal)")
        #expect(refusal.line == (edit == "rehash" ? k + 2 : k + 1), "\(edit): \(refusal)")
    }
}

/// A `BlockingWorkRunner` that counts the calls (`runs`) and the bodies it ran (`bodies`),
/// each on a thread of its own as the default runner does.
final class CountingRunner: BlockingWorkRunner {
    private let state = Mutex((runs: 0, bodies: 0))
    private let thread = DedicatedThreadRunner(name: "test-counting-runner")

    var counts: (runs: Int, bodies: Int) { state.withLock { $0 } }

    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        state.withLock { $0.runs += 1 }
        return try await thread.run { [self] in
            state.withLock { $0.bodies += 1 }
            return try body()
        }
    }
}
