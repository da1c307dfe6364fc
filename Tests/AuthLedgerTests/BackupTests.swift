import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import Foundation
import Synchronization
import Testing

/// `LMDBBackup` and `authledger backup` / `restore` (SPEC 15, "Backup and restore"): a hot
/// copy taken while 64 writers append holds every event acknowledged before it began,
/// restores and verifies; occupied targets and corrupted backups are refused.
@Suite(.serialized) struct BackupTests {
    /// What the writers have had acknowledged (seq → hash), how far each got, and when to stop.
    final class Progress: Sendable {
        let acked = Mutex<[UInt64: Hash32]>([:])
        let perWriter = Mutex<[Int]>(Array(repeating: 0, count: 64))
        let stop = Atomic<Bool>(false)
    }

    /// `device.accessed` of `user`'s device `d1`, the `k`-th of that user (its own id and time).
    static func access(_ user: Int, _ k: Int) -> String {
        let at = Timestamp(milliseconds: 1_772_355_600_000 + Int64(k) * 1000).description
        return line("device.accessed", user: "writer-\(user)", at: at, data: #"{"deviceId":"d1"}"#,
                    id: String(format: "%08x-0000-4000-8000-%012x", user + 1, k + 1))
    }

    static func register(_ user: Int) -> String {
        line("device.registered", user: "writer-\(user)", at: "2026-03-01T09:00:00Z",
             data: #"{"deviceId":"d1","name":"Phone","kind":"mobile","platform":"ios","binding":"permanent","via":"initial"}"#,
             id: String(format: "%08x-0000-4000-8000-%012x", user + 1, 0))
    }

    @Test func aBackupTakenWhile64WritersAppendHoldsEveryAcknowledgedEventAndRestoresVerified() async throws {
        // Given a store with 64 users, its server key and a Shared Signals key directory
        let storePath = Support.tempDir("backup-src")
        let ledger = try await Ledger(lmdb: storePath)
        _ = try await ledger.append(try inputs((0..<64).map(Self.register).joined(separator: "\n")))
        _ = try ledger.secrets()
        try FileManager.default.createDirectory(atPath: storePath + "/ssf-keys", withIntermediateDirectories: true)
        try Data("secret-bytes".utf8).write(to: URL(fileURLWithPath: storePath + "/ssf-keys/secret.key"))
        let keys = [LMDBBackup.KeyFile(name: "server.key", path: storePath + "/server.key"),
                    LMDBBackup.KeyFile(name: "checkpoint.key", path: storePath + "/checkpoint.key"),
                    LMDBBackup.KeyFile(name: "ssf-keys", path: storePath + "/ssf-keys")]

        // When 64 writers append, each its own user's events one request after another, and
        // a backup is taken once each has had 5 acknowledged
        let progress = Progress()
        let dir = TemporaryDirectory.path("backup-dir")
        let (manifest, ackedBefore) = try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<64 {
                group.addTask {
                    var k = 1
                    while !progress.stop.load(ordering: .relaxed) || k <= 10 {
                        let outcome = try await ledger.append(try inputs(Self.access(w, k)))
                        progress.acked.withLock { a in for e in outcome.appended { a[e.seq] = e.hash } }
                        progress.perWriter.withLock { $0[w] = k }
                        k += 1
                    }
                }
            }
            while progress.perWriter.withLock({ $0.min()! }) < 5 { try await Task.sleep(for: .milliseconds(5)) }
            let before = progress.acked.withLock { $0 }
            let m = try await LMDBBackup.backup(ledger, to: dir, keyFiles: keys)
            progress.stop.store(true, ordering: .relaxed)
            try await group.waitForAll()
            return (m, before)
        }

        // Then the backup's head is at or past every event acknowledged before it began, and
        // is the live log's event at that seq; appends went on (each writer reached 10)
        let maxBefore = try #require(ackedBefore.keys.max())
        #expect(manifest.head.seq >= maxBefore)
        #expect(manifest.head.seq >= 64 + 64 * 5)
        let live = try await ledger.events(from: manifest.head.seq, limit: 1)
        #expect(live.first?.hash == manifest.head.hash)
        #expect(progress.perWriter.withLock { $0.allSatisfy { $0 >= 10 } })
        #expect(Set(manifest.files.map(\.path)) == ["store/data.mdb", "keys/server.key", "keys/ssf-keys/secret.key"])
        #expect(!FileManager.default.fileExists(atPath: dir + "/store/lock.mdb"))

        // When it is restored into a new store
        let target = TemporaryDirectory.path("backup-restored")
        let restored = try await LMDBBackup.restore(from: dir, to: target,
                                                    keyFiles: keys.map { .init(name: $0.name, path: $0.path.replacingOccurrences(of: storePath, with: target)) },
                                                    configuration: Ledger.Configuration(keyDirectory: target))
        #expect(restored == manifest)
        // Then it verifies, its head is the manifest's, every event acknowledged before the
        // backup is there with its hash, and the key files are the originals
        let copy = try await Ledger(lmdb: target)
        #expect(try await copy.verify() == manifest.head)
        let events = try await copy.events(from: 1)
        let hashes = Dictionary(uniqueKeysWithValues: events.map { ($0.seq, $0.hash) })
        for (seq, hash) in ackedBefore { #expect(hashes[seq] == hash, "acknowledged event \(seq) missing or changed") }
        #expect(FileManager.default.contents(atPath: target + "/server.key") == FileManager.default.contents(atPath: storePath + "/server.key"))
        #expect(FileManager.default.contents(atPath: target + "/ssf-keys/secret.key") == Data("secret-bytes".utf8))
        await copy.close()
        await ledger.close()
    }

    @Test func aManifestRecordsWhatWitnessesCosignedBeyondTheHead() async throws {
        let ledger = try await Support.freshLedger()
        _ = try await ledger.append(try inputs(Self.register(0)))
        let dir = TemporaryDirectory.path("backup-witnessed")
        let m = try await LMDBBackup.backup(ledger, to: dir, keyFiles: [], witnessedSize: { 7 })
        #expect(m.witnessedSize == 7 && m.head.seq == 1 && m.isBehindWitnesses)
        #expect(try LMDBBackup.checkedManifest(dir) == m)
        await ledger.close()
    }

    // MARK: The CLI

    func al(_ args: [String]) throws -> CLIRun { try CLI.run(args) }

    /// A store with a few events and its server key, made through the CLI.
    func cliStore() throws -> String {
        let store = TemporaryDirectory.path("backup-cli")
        #expect(try al(["register", "alice", "phone", "--name", "Phone", "--store", store, "--now", "2026-06-01T09:00:00Z"]).status == 0)
        #expect(try al(["send-otp", "alice", "--channel", "sms", "--target", "+15550100", "--store", store, "--now", "2026-06-01T09:01:00Z"]).status == 0)
        return store
    }

    @Test func theCommandsBackUpRestoreAndRefuseOccupiedTargets() throws {
        let store = try cliStore()
        let dir = TemporaryDirectory.path("backup-cli-dir")
        // a backup into a new directory: ok, with its head
        let ok = try al(["backup", dir, "--store", store, "--json"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.json?["ok"]?.boolValue == true && ok.json?["head"]?["seq"]?.intValue == 2)
        // a second one into the same, now occupied, directory: a usage error, nothing changed
        let manifest = FileManager.default.contents(atPath: dir + "/manifest.json")
        let again = try al(["backup", dir, "--store", store])
        #expect(again.status == 2 && again.stderr.contains("exists and is not empty"))
        #expect(FileManager.default.contents(atPath: dir + "/manifest.json") == manifest)
        // a file where the directory would go: refused too
        let file = TemporaryDirectory.path("backup-cli-file")
        FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        #expect(try al(["backup", file, "--store", store]).status == 2)

        // restore into a new store: ok, verified, the server key beside it
        let target = TemporaryDirectory.path("restore-cli")
        let restored = try al(["restore", dir, "--store", target])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(restored.stdout.contains("head seq 2"))
        #expect(try al(["verify", "--store", target]).status == 0)
        #expect(FileManager.default.contents(atPath: target + "/server.key") == FileManager.default.contents(atPath: store + "/server.key"))
        // the same target again (now occupied): refused, the restored store untouched
        let occupied = try al(["restore", dir, "--store", target])
        #expect(occupied.status == 2 && occupied.stderr.contains("exists and is not empty"))
        #expect(try al(["verify", "--store", target]).status == 0)
        // restore without --store: a usage error
        #expect(try al(["restore", dir]).status == 2)
    }

    @Test func restoreRefusesACorruptedBackupAndLeavesNothing() throws {
        let store = try cliStore()
        let dir = TemporaryDirectory.path("backup-corrupt")
        #expect(try al(["backup", dir, "--store", store]).status == 0)
        // One byte of the copy flipped (past its first pages, in the data)
        let data = dir + "/store/data.mdb"
        var bytes = try #require(FileManager.default.contents(atPath: data))
        bytes[bytes.count - 100] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: data))
        let target = TemporaryDirectory.path("restore-corrupt")
        let refused = try al(["restore", dir, "--store", target])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("error: tampered: ") && refused.stderr.contains("store/data.mdb"))
        #expect(!FileManager.default.fileExists(atPath: target + "/data.mdb"))
        // A missing manifest: not a backup
        try FileManager.default.removeItem(atPath: dir + "/manifest.json")
        let none = try al(["restore", dir, "--store", target])
        #expect(none.status == 1 && none.stderr.contains("manifest.json"))
    }

    @Test func restoreWarnsWithTheSizesWhenWitnessesCosignedBeyondTheBackup() throws {
        let store = try cliStore()
        let dir = TemporaryDirectory.path("backup-witness")
        #expect(try al(["backup", dir, "--store", store]).status == 0)
        // The manifest says witnesses had cosigned size 9 (the file checks do not cover it)
        let path = dir + "/manifest.json"
        let text = String(decoding: try #require(FileManager.default.contents(atPath: path)), as: UTF8.self)
        try Data(text.replacingOccurrences(of: #""witnessedSize":null"#, with: #""witnessedSize":9"#).utf8).write(to: URL(fileURLWithPath: path))
        let target = TemporaryDirectory.path("restore-witness")
        let run = try al(["restore", dir, "--store", target])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("warning: witnesses had cosigned a checkpoint of size 9") && run.stderr.contains("(size 2)"))
    }
}
