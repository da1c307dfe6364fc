import Foundation
import AuthLedger
import AuthLedgerTestSupport
import Testing

/// The malformed-input corpus (Fixtures/refused/input, listed in manifest.tsv): each
/// file, imported with the real CLI into a populated store, is refused with its code
/// naming its line, and leaves the store byte-identical (data.mdb, export, verify).
@Suite(.serialized) struct BadInputCorpusTests {
    struct Case: CustomStringConvertible {
        var file: String
        var code: String
        var line: Int
        var description: String { file }
    }

    static let directory = Rig.fixtures("refused/input").path

    static func manifest() throws -> [Case] {
        let text = try String(contentsOfFile: directory + "/manifest.tsv", encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { row in
            let f = row.split(separator: "\t").map(String.init)
            return Case(file: f[0], code: f[1], line: Int(f[2])!)
        }
    }

    @Test func everyCorpusFileIsListedInTheManifest() throws {
        let listed = Set(try Self.manifest().map(\.file))
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory)
            .filter { $0.hasSuffix(".jsonl") && !$0.hasPrefix("_") }
        #expect(Set(files) == listed)
        #expect(listed.count >= 80)
    }

    @Test(arguments: StorageKind.all) func everyMalformedFileIsRefusedWithItsCodeAndLineAndTheStoreIsUnchanged(_ storage: StorageKind) throws {
        // Given a store populated with the base history
        let store = try Rig.store(storage, "corpus")
        // (byte identity of the files: an LMDB store; a PostgreSQL store is compared by export and verify)
        let files = { storage == .lmdb ? try Rig.snapshot(store) : [:] }
        let populate = try Rig.cli(["import", "--store", store, Rig.baseFixturePath])
        try #require(populate.status == 0, "\(populate.stderr)")
        let export0 = try Rig.cli(["export", "--store", store])
        let verify0 = try Rig.cli(["verify", "--store", store, "--json"])
        let files0 = try files()
        try #require(verify0.status == 0 && export0.stdoutBytes.count > 0)
        var refused = 0
        for c in try Self.manifest() {
            // When the malformed file is imported
            let path = Self.directory + "/" + c.file
            let r = try Rig.cli(["import", "--store", store, path])
            // Then it is refused with its code, naming the file and line
            #expect(r.status == 1, "\(c.file): exit \(r.status)")
            let expected = "error: \(c.code): \(path) line \(c.line):"
            #expect(r.stderr.hasPrefix(expected), "\(c.file): expected \(expected) got \(r.stderr.prefix(300))")
            #expect(r.stdout.isEmpty, "\(c.file): printed \(r.stdout.prefix(200))")
            // And the store is byte-identical: files, export and verify
            #expect(try files() == files0, "\(c.file): store files changed")
            let export = try Rig.cli(["export", "--store", store])
            #expect(export.stdoutBytes == export0.stdoutBytes, "\(c.file): export changed")
            let verify = try Rig.cli(["verify", "--store", store, "--json"])
            #expect(verify.status == 0 && verify.stdout == verify0.stdout, "\(c.file): verify changed: \(verify.stdout) \(verify.stderr)")
            if r.status == 1 && r.stderr.hasPrefix(expected) { refused += 1 }
        }
        // And the correct next recorded event is still accepted (the corpus' chain is the store's)
        let control = try Rig.cli(["import", "--store", store, Self.directory + "/_next-recorded-valid.jsonl"])
        #expect(control.status == 0, "\(control.stderr)")
        #expect(try Rig.cli(["verify", "--store", store]).status == 0)
        print("bad-input corpus: \(refused) of \(try Self.manifest().count) files refused with their code and line; store unchanged")
    }

    @Test(arguments: StorageKind.all) func malformedInputOnStandardInputIsRefusedToo(_ storage: StorageKind) throws {
        let store = try Rig.store(storage, "corpus-stdin")
        try #require(try Rig.cli(["import", "--store", store, Rig.baseFixturePath]).status == 0)
        let bytes = Array(try #require(FileManager.default.contents(atPath: Self.directory + "/utf8-invalid-byte.jsonl")))
        let r = try Rig.cli(["import", "--store", store, "-"], stdin: bytes)
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: invalid_event: - line 4:"), "\(r.stderr)")
    }
}
