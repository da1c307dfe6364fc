import ArgumentParser
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerServer
import AuthLedgerSharedSignals
import Foundation

/// `authledger backup DIR`: a hot, compacted, verified copy of an LMDB store with its key files.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Back up an LMDB store while it is written: a compacted copy, its key files and a manifest, verified.",
        discussion: """
        DIR must be new or empty. The copy is one snapshot of the store, taken without holding back \
        writers (a running server keeps appending); it is verified in full (every hash, index and \
        projection) before success is reported, and the manifest records its head, the time, and \
        each file's SHA-256. Key files: server.key, checkpoint.key and the Shared Signals key \
        directory, from where this store's settings put them (AUTHLEDGER_KEY_DIR, …). A PostgreSQL \
        store is backed up with pg_dump and its key directory (docs/OPERATIONS.md).
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The backup directory (new or empty).") var directory: String
    @Option(name: .customLong("ssf-key-dir"), help: "Directory of the SET signing keys (default AUTHLEDGER_SSF_KEY_DIR, else ssf-keys in the store).")
    var ssfKeyDirectory: String?

    func run() async throws {
        guard !global.isPostgres else {
            throw ValidationError("backup copies an LMDB store; back up a PostgreSQL store with pg_dump and its key directory (docs/OPERATIONS.md, \"Backup and restore\")")
        }
        guard !LMDBBackup.isOccupied(directory) else {
            throw ValidationError("the backup directory \(directory) exists and is not empty: name a new or empty one")
        }
        guard FileManager.default.fileExists(atPath: global.storePath + "/data.mdb") else {
            throw ValidationError("no LMDB store at \(global.storePath) (--store PATH)")
        }
        let ledger = try await global.openLedger()
        let manifest: LMDBBackup.Manifest
        do {
            manifest = try await LMDBBackup.backup(ledger, to: directory, keyFiles: global.backupKeyFiles(ssfKeyDirectory: ssfKeyDirectory),
                                                   witnessedSize: { try await WitnessedSize.of(ledger) })
        } catch {
            await ledger.close()
            throw error
        }
        await ledger.close()
        let bytes = manifest.files.reduce(0) { $0 + $1.bytes }
        if global.json {
            Output.json(.object([("ok", .bool(true)), ("directory", .string(directory)),
                                 ("head", .object([("seq", .int(Int64(manifest.head.seq))), ("hash", .string(manifest.head.hash.description))])),
                                 ("files", .int(Int64(manifest.files.count))), ("bytes", .int(bytes)),
                                 ("witnessedSize", manifest.witnessedSize.map { .int(Int64($0)) } ?? .null)]))
        } else {
            Output.line("ok: backed up and verified into \(directory): head seq \(manifest.head.seq) hash \(manifest.head.hash), \(manifest.files.count) file\(manifest.files.count == 1 ? "" : "s"), \(bytes) bytes")
        }
        Backup.warnAboutWitnesses(manifest, restoring: false)
    }

    /// Says so on stderr when witnesses had cosigned beyond the backup's head (they refuse a
    /// log restored from it), or, on restore, what they had cosigned when it was taken.
    static func warnAboutWitnesses(_ m: LMDBBackup.Manifest, restoring: Bool) {
        guard let witnessed = m.witnessedSize else { return }
        if m.isBehindWitnesses {
            Output.error("""
            warning: witnesses had cosigned a checkpoint of size \(witnessed) when this backup was taken, beyond its \
            head (size \(m.head.seq)): \(restoring ? "the restored log" : "a log restored from it") goes back before \
            that checkpoint, and those witnesses refuse it (docs/OPERATIONS.md, "Backup and restore")
            """)
        } else if restoring {
            Output.error("""
            note: witnesses had cosigned up to size \(witnessed) when this backup (size \(m.head.seq)) was taken, \
            on \(m.createdAt); any that cosigned beyond size \(m.head.seq) since refuse the restored log: \
            compare with what they hold (docs/OPERATIONS.md, "Backup and restore")
            """)
        }
    }
}

/// `authledger restore DIR --store PATH`: a backup checked, copied into a new store, verified.
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a backup into a new LMDB store directory, checked against its manifest and verified.",
        discussion: """
        --store PATH must be new or empty; every file is checked against the manifest (size and \
        SHA-256) before anything is written, the key files go where this store's settings put them \
        (an existing one must be identical), and the restored store is verified in full: its head \
        must be the manifest's. On failure nothing is left in PATH.
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The backup directory (written by authledger backup).") var directory: String
    @Option(name: .customLong("ssf-key-dir"), help: "Where the SET signing keys go (default AUTHLEDGER_SSF_KEY_DIR, else ssf-keys in the store).")
    var ssfKeyDirectory: String?

    func run() async throws {
        guard global.store != nil else { throw ValidationError("restore needs --store PATH: the new store directory") }
        guard !global.isPostgres else {
            throw ValidationError("restore writes an LMDB store; a PostgreSQL store is restored with pg_restore (docs/OPERATIONS.md)")
        }
        guard !LMDBBackup.isOccupied(global.storePath) else {
            throw ValidationError("the restore target \(global.storePath) exists and is not empty: restore into a new or empty directory")
        }
        let manifest = try await LMDBBackup.restore(from: directory, to: global.storePath,
                                                    keyFiles: global.backupKeyFiles(ssfKeyDirectory: ssfKeyDirectory),
                                                    configuration: global.configuration)
        if global.json {
            Output.json(.object([("ok", .bool(true)), ("store", .string(global.storeName)),
                                 ("head", .object([("seq", .int(Int64(manifest.head.seq))), ("hash", .string(manifest.head.hash.description))])),
                                 ("createdAt", .string(manifest.createdAt.formatted)),
                                 ("witnessedSize", manifest.witnessedSize.map { .int(Int64($0)) } ?? .null)]))
        } else {
            Output.line("ok: restored \(directory) (taken \(manifest.createdAt)) into \(global.storeName) and verified: head seq \(manifest.head.seq) hash \(manifest.head.hash)")
        }
        Backup.warnAboutWitnesses(manifest, restoring: true)
    }
}

extension GlobalOptions {
    /// The files beside the log a backup holds, where this store's settings put them.
    func backupKeyFiles(ssfKeyDirectory: String?) -> [LMDBBackup.KeyFile] {
        let c = configuration
        var out: [LMDBBackup.KeyFile] = []
        if let f = c.effectiveServerKeyFile { out.append(.init(name: "server.key", path: f)) }
        if let f = c.effectiveCheckpointKeyFile { out.append(.init(name: "checkpoint.key", path: f)) }
        if let d = ssfKeyDirectory ?? SharedSignalsOptions.environmentKeyDirectory ?? SSFKeys.defaultDirectory(storePath: c.keyDirectory) {
            out.append(.init(name: "ssf-keys", path: d))
        }
        return out
    }
}
