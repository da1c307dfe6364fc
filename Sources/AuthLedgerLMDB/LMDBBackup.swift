import Crypto
import Foundation
import LMDB

/// Hot backups of an LMDB store and their restore (`authledger backup DIR`,
/// `authledger restore DIR --store PATH`).
///
/// A backup directory holds:
/// - `store/data.mdb`: a compacted copy of the store at one snapshot, taken while writers
///   go on (`Environment.copyCompacted(to:)` of the LMDB wrapper);
/// - `keys/<name>`: the files kept beside the log (the OTP server key, the checkpoint key,
///   the Shared Signals key directory), copied as they are;
/// - `manifest.json`, written last: the format, the release that wrote it, the time, the
///   head (seq and chain hash) of the copy, the size witnesses had cosigned when it was
///   taken, and the size and SHA-256 of every file.
///
/// A backup is reported only once its copy passed the ledger's full verification; a restore
/// checks every file against the manifest, writes into an empty target only, and verifies
/// the restored store (its head must be the manifest's) before it reports success.
public enum LMDBBackup {
    /// The `format` of the manifests this release writes and reads.
    public static let format = "authledger-lmdb-backup/1"
    /// The manifest's file name in a backup directory.
    public static let manifestName = "manifest.json"
    static let storeName = "store", keysName = "keys"

    /// A file or directory kept beside the log, by the name it has in a backup (`server.key`,
    /// `checkpoint.key`, `ssf-keys`) and where it is.
    public struct KeyFile: Sendable, Equatable {
        /// Its name under `keys/` in a backup.
        public var name: String
        /// Where it is (backup) or goes (restore).
        public var path: String
        /// The key file `name` at `path`.
        public init(name: String, path: String) {
            self.name = name
            self.path = path
        }
    }

    /// What a backup holds (its `manifest.json`).
    public struct Manifest: Sendable, Equatable {
        /// One file of the backup.
        public struct File: Sendable, Equatable {
            /// Its path in the backup directory (`store/data.mdb`, `keys/server.key`).
            public var path: String
            /// Its size in bytes.
            public var bytes: Int64
            /// The SHA-256 of its content, in hex.
            public var sha256: String
        }
        /// The release that wrote the backup (`AuthLedgerVersion.current`).
        public var version: String
        /// When the backup was taken.
        public var createdAt: Timestamp
        /// The head of the copied log (its tree size is `head.seq`).
        public var head: Head
        /// The largest tree size witnesses had cosigned when the backup was taken (nil: no
        /// witnessing, or nothing cosigned). Larger than `head.seq`: those witnesses refuse
        /// the log once it is restored from this backup and grows differently.
        public var witnessedSize: UInt64?
        /// Every file of the backup but the manifest.
        public var files: [File]

        /// Whether witnesses had cosigned a checkpoint beyond this backup's head.
        public var isBehindWitnesses: Bool { (witnessedSize ?? 0) > head.seq }

        var json: JSON {
            .object([
                ("format", .string(LMDBBackup.format)),
                ("version", .string(version)),
                ("createdAt", .string(createdAt.formatted)),
                ("head", .object([("seq", .int(Int64(head.seq))), ("hash", .string(head.hash.description))])),
                ("witnessedSize", witnessedSize.map { .int(Int64($0)) } ?? .null),
                ("files", .array(files.map { f in
                    .object([("path", .string(f.path)), ("bytes", .int(f.bytes)), ("sha256", .string(f.sha256))])
                })),
            ])
        }

        init(version: String, createdAt: Timestamp, head: Head, witnessedSize: UInt64?, files: [File]) {
            self.version = version
            self.createdAt = createdAt
            self.head = head
            self.witnessedSize = witnessedSize
            self.files = files
        }

        init(json j: JSON) throws {
            func bad(_ what: String) -> LedgerError { LedgerError(.tampered, "the backup's manifest is not valid: \(what)") }
            guard j["format"]?.stringValue == LMDBBackup.format else {
                throw bad("its format is \(j["format"]?.stringValue ?? "missing"), this release reads \(LMDBBackup.format)")
            }
            guard let version = j["version"]?.stringValue, let at = j["createdAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
                  let seq = j["head"]?["seq"]?.intValue, seq >= 0,
                  let hash = j["head"]?["hash"]?.stringValue.flatMap(Hash32.init(hex:)),
                  let list = j["files"]?.arrayValue else { throw bad("version, createdAt, head or files missing") }
            var witnessed: UInt64?
            if let w = j["witnessedSize"], w != .null {
                guard let v = w.intValue, v >= 0 else { throw bad("witnessedSize") }
                witnessed = UInt64(v)
            }
            let files = try list.map { f -> File in
                guard let path = f["path"]?.stringValue, LMDBBackup.isPlainRelativePath(path),
                      let bytes = f["bytes"]?.intValue, bytes >= 0,
                      let sha = f["sha256"]?.stringValue, sha.count == 64 else { throw bad("a file entry") }
                return File(path: path, bytes: bytes, sha256: sha)
            }
            guard files.contains(where: { $0.path == LMDBBackup.dataPath }) else { throw bad("no \(LMDBBackup.dataPath)") }
            self.init(version: version, createdAt: at, head: Head(seq: UInt64(seq), hash: hash), witnessedSize: witnessed, files: files)
        }
    }

    static let dataPath = storeName + "/data.mdb"

    // MARK: Backup

    /// Backs up the LMDB store of `ledger` into `directory` (created, or existing and
    /// empty) while it is being written: the store's compacted copy, the `keyFiles` that
    /// exist, and the manifest. The copy is verified (every hash, index and projection)
    /// before the manifest is written; on any failure what was written is removed.
    /// `witnessedSize` is asked after the copy (the size witnesses have cosigned).
    public static func backup(_ ledger: Ledger, to directory: String, keyFiles: [KeyFile],
                              witnessedSize: @Sendable () async throws -> UInt64? = { nil }) async throws -> Manifest {
        guard let storage = ledger.storage as? LMDBStorage else {
            throw LedgerError(.storageError, "only an LMDB store is backed up this way (PostgreSQL: pg_dump and the key directory)")
        }
        let created = try prepareEmptyDirectory(directory, for: "backup")
        do {
            let store = directory + "/" + storeName, keys = directory + "/" + keysName
            try makeDirectory(store)
            try await offloaded { try storage.environment.copyCompacted(to: store) }
            chmod(store + "/data.mdb", 0o600)
            try makeDirectory(keys)
            for k in keyFiles where FileManager.default.fileExists(atPath: k.path) {
                try copyTree(k.path, to: keys + "/" + k.name)
            }
            let head = try await verified(store: store, configuration: Ledger.Configuration(keyDirectory: keys))
            let witnessed = try await witnessedSize()
            // Recreated at need (the copy is opened only to be verified).
            unlink(store + "/lock.mdb")
            unlink(store + "/compaction.lock")
            let files = try [dataPath].map { try fileEntry(directory, $0) } + listFiles(keys).map { try fileEntry(directory, keysName + "/" + $0) }
            let manifest = Manifest(version: AuthLedgerVersion.current, createdAt: .now(), head: head,
                                    witnessedSize: witnessed, files: files)
            try writeDurably(Array((manifest.json.serialized() + "\n").utf8), to: directory + "/" + manifestName)
            return manifest
        } catch {
            removeWritten(directory, created: created)
            throw error
        }
    }

    // MARK: Restore

    /// Reads the manifest of the backup in `directory` and checks every file it lists (size
    /// and SHA-256). Throws `tampered` naming the first file that differs.
    public static func checkedManifest(_ directory: String) throws -> Manifest {
        guard let data = FileManager.default.contents(atPath: directory + "/" + manifestName) else {
            throw LedgerError(.storageError, "no \(manifestName) in \(directory): not a backup, or an unfinished one")
        }
        let json: JSON
        do { json = try JSON.parse(Array(data)) } catch { throw LedgerError(.tampered, "the backup's manifest is not JSON: \(error)") }
        let manifest = try Manifest(json: json)
        for f in manifest.files {
            guard let found = try? fileEntry(directory, f.path) else {
                throw LedgerError(.tampered, "the backup's \(f.path) is missing or unreadable")
            }
            guard found == f else {
                throw LedgerError(.tampered, "the backup's \(f.path) does not match its manifest (\(found.bytes != f.bytes ? "size" : "SHA-256"))")
            }
        }
        return manifest
    }

    /// Restores the backup in `directory` into the LMDB store directory `storePath`
    /// (created, or existing and empty): the checked files (``checkedManifest(_:)``) are
    /// copied, each key file to its place in `keyFiles` (by name; one that exists there
    /// already must have the same content), and the restored store is opened with
    /// `configuration` and verified; its head must be the manifest's. On any failure the
    /// store directory's content and the key files written are removed.
    public static func restore(from directory: String, to storePath: String, keyFiles: [KeyFile],
                               configuration: Ledger.Configuration) async throws -> Manifest {
        let manifest = try checkedManifest(directory)
        // Every key file's place, and no conflict, before anything is written.
        var copies: [(from: String, to: String)] = []
        for f in manifest.files where f.path.hasPrefix(keysName + "/") {
            let rest = f.path.dropFirst(keysName.count + 1)
            let name = String(rest.prefix { $0 != "/" })
            guard let place = keyFiles.first(where: { $0.name == name }) else {
                throw LedgerError(.storageError, "the backup holds \(f.path), and no place for \(name) is configured")
            }
            let to = place.path + rest.dropFirst(name.count)
            if let existing = FileManager.default.contents(atPath: to) {
                guard hexDigest(Array(existing)) == f.sha256 else {
                    throw LedgerError(.storageError, "\(to) exists with other content than the backup's \(f.path): move it away first")
                }
                continue
            }
            copies.append((directory + "/" + f.path, to))
        }
        let created = try prepareEmptyDirectory(storePath, for: "restore target")
        var written: [String] = []
        do {
            try copyFile(directory + "/" + dataPath, to: storePath + "/data.mdb")
            for c in copies {
                try makeDirectory((c.to as NSString).deletingLastPathComponent, intermediate: true)
                try copyFile(c.from, to: c.to)
                written.append(c.to)
            }
            let head = try await verified(store: storePath, configuration: configuration)
            guard head == manifest.head else {
                throw LedgerError(.tampered, "the restored store's head (seq \(head.seq)) is not the manifest's (seq \(manifest.head.seq))")
            }
            return manifest
        } catch {
            for w in written { unlink(w) }
            removeWritten(storePath, created: created)
            throw error
        }
    }

    // MARK: Pieces

    /// Opens the store at `store`, verifies it in full (off the cooperative pool: `verify` takes a thread), closes it.
    static func verified(store: String, configuration: Ledger.Configuration) async throws -> Head {
        let ledger = try await Ledger(lmdb: store, configuration: configuration)
        do {
            let head = try await ledger.verify()
            await ledger.close()
            return head
        } catch {
            await ledger.close()
            throw error
        }
    }

    /// Creates `path` (0700) or accepts it when it is an empty directory; refuses
    /// anything else. Returns whether it was created.
    static func prepareEmptyDirectory(_ path: String, for what: String) throws -> Bool {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDir) {
            guard isDir.boolValue else { throw LedgerError(.storageError, "the \(what) \(path) exists and is not a directory") }
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? ["?"]
            guard entries.isEmpty else { throw LedgerError(.storageError, "the \(what) \(path) exists and is not empty") }
            return false
        }
        try makeDirectory(path, intermediate: true)
        return true
    }

    /// Whether `path` exists and is not an empty directory (what backup and restore refuse).
    public static func isOccupied(_ path: String) -> Bool {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else { return false }
        return !isDir.boolValue || !((try? FileManager.default.contentsOfDirectory(atPath: path))?.isEmpty ?? false)
    }

    /// After a failure: the directory when this run created it, else what it put inside.
    static func removeWritten(_ path: String, created: Bool) {
        if created {
            try? FileManager.default.removeItem(atPath: path)
        } else {
            for e in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                try? FileManager.default.removeItem(atPath: path + "/" + e)
            }
        }
    }

    static func makeDirectory(_ path: String, intermediate: Bool = false) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: intermediate,
                                                attributes: [.posixPermissions: 0o700])
    }

    /// Copies the file or directory `from` to `to` (files 0600, directories 0700, synced),
    /// leaving out the temporary files of crash-safe key writes (names starting with `.`).
    static func copyTree(_ from: String, to: String) throws {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: from, isDirectory: &isDir) else { return }
        guard isDir.boolValue else { return try copyFile(from, to: to) }
        try makeDirectory(to)
        for e in try FileManager.default.contentsOfDirectory(atPath: from).sorted() where !e.hasPrefix(".") {
            try copyTree(from + "/" + e, to: to + "/" + e)
        }
        try Environment.fsyncFile(to)
    }

    static func copyFile(_ from: String, to: String) throws {
        guard let input = FileHandle(forReadingAtPath: from) else {
            throw LedgerError(.storageError, "cannot read \(from)")
        }
        defer { try? input.close() }
        let fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LedgerError(.storageError, "cannot create \(to): \(String(cString: strerror(errno)))") }
        let output = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
            try output.write(contentsOf: chunk)
        }
        try output.synchronize()
    }

    /// Writes `bytes` to `path` through a temporary file, synced, renamed into place.
    static func writeDurably(_ bytes: [UInt8], to path: String) throws {
        let temp = path + ".tmp"
        unlink(temp)
        guard FileManager.default.createFile(atPath: temp, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
            throw LedgerError(.storageError, "cannot write \(temp)")
        }
        try Environment.fsyncFile(temp)
        guard rename(temp, path) == 0 else { throw LedgerError(.storageError, "cannot rename \(temp)") }
        try Environment.fsyncFile((path as NSString).deletingLastPathComponent)
    }

    /// The files under `directory`, as paths relative to it, sorted.
    static func listFiles(_ directory: String) throws -> [String] {
        var out: [String] = []
        for e in try FileManager.default.contentsOfDirectory(atPath: directory).sorted() {
            var isDir: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: directory + "/" + e, isDirectory: &isDir)
            if isDir.boolValue {
                out += try listFiles(directory + "/" + e).map { e + "/" + $0 }
            } else {
                out.append(e)
            }
        }
        return out
    }

    /// The manifest entry of the file `path` (relative to `directory`): its size and SHA-256, read in 1 MiB pieces.
    static func fileEntry(_ directory: String, _ path: String) throws -> Manifest.File {
        guard let h = FileHandle(forReadingAtPath: directory + "/" + path) else {
            throw LedgerError(.storageError, "cannot read \(path)")
        }
        defer { try? h.close() }
        var sha = SHA256()
        var bytes: Int64 = 0
        while let chunk = try h.read(upToCount: 1 << 20), !chunk.isEmpty {
            sha.update(data: chunk)
            bytes += Int64(chunk.count)
        }
        return Manifest.File(path: path, bytes: bytes, sha256: hexString(Array(sha.finalize())))
    }

    static func hexDigest(_ bytes: [UInt8]) -> String { hexString(Array(SHA256.hash(data: bytes))) }

    /// A path of the manifest: relative, without `..`, `.` or empty components.
    static func isPlainRelativePath(_ path: String) -> Bool {
        !path.hasPrefix("/") && path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
    }

    /// Runs blocking work (an LMDB copy, a full verification: minutes on a large store) on a
    /// thread of its own, off the cooperative pool. (Not NIOThreadPool: the LMDB driver links
    /// no NIO, so an embedder of `AuthLedgerLMDB` builds none — tools/check-layering.)
    static func offloaded<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await DedicatedThread.run(name: "authledger-backup", body)
    }
}
