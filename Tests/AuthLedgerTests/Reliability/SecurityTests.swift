import Foundation
@testable import AuthLedger
@testable import AuthLedgerCore
import AuthLedgerTestSupport
import Testing

/// Security properties observable from outside (docs/SECURITY.md): file modes of the
/// store, no secret or location in error messages, no secret or clear target in the log.
@Suite struct SecurityTests {
    static func mode(_ path: String) throws -> Int {
        let attrs = try FileManager.default.attributesOfItem(atPath: path)
        return (attrs[.posixPermissions] as! NSNumber).intValue & 0o777
    }

    // LMDB only: the modes of the store directory's files (a PostgreSQL store has none).
    @Test func theStoreDirectoryIsCreated0700AndItsFiles0600() throws {
        // Given a store created by the CLI, with an OTP sent (which creates the server key)
        let store = try Rig.tempDir("sec") + "/nested/store"
        let r = try Rig.cli(["send-otp", "--store", store, "alice", "--channel", "email", "--target", "alice@example.com"])
        #expect(r.status == 0, "\(r.stderr)")
        // Then the directory is 0700 and every file in it 0600 (a umask can only remove bits)
        #expect(try Self.mode(store) == 0o700)
        for name in ["data.mdb", "lock.mdb", "server.key"] {
            #expect(try Self.mode(store + "/" + name) & 0o077 == 0, "\(name) is readable by others")
            #expect(try Self.mode(store + "/" + name) & 0o600 == 0o600)
        }
        #expect(try Self.mode(store + "/server.key") == 0o600)
    }

    /// A scripted session with many refusals; returns the OTP code, the server key and every stderr.
    /// On PostgreSQL the server key is in AUTHLEDGER_KEY_DIR.
    static func session(_ storage: StorageKind) throws -> (store: String, code: String, key: [UInt8], stderrs: [String], export: [UInt8]) {
        let store = try Rig.store(storage, "sec-msg")
        let env = Rig.keyEnvironment(storage, store)
        let keys = env["AUTHLEDGER_KEY_DIR"] ?? store
        var stderrs: [String] = []
        func run(_ args: [String], expect status: Int32) throws -> Rig.Result {
            let r = try Rig.cli(args + ["--store", store], environment: env)
            #expect(r.status == status, "\(args): \(r.stderr)")
            if status != 0 { stderrs.append(r.stderr) }
            return r
        }
        _ = try run(["register", "alice", "phone", "--name", "Alice phone", "--kind", "mobile"], expect: 0)
        let sent = try run(["send-otp", "alice", "--channel", "email", "--target", "alice.secret@example.com", "--json"], expect: 0)
        let answer = try JSON.parse(Array(sent.stdout.utf8))
        let code = try #require(answer["code"]?.stringValue)
        let otp = try #require(answer["otpId"]?.stringValue)
        let wrong = code == "000000" ? "111111" : "000000"
        _ = try run(["verify-otp", "alice", otp, wrong], expect: 1)
        _ = try run(["verify-otp", "alice", "no-such-otp", code], expect: 1)
        _ = try run(["send-otp", "alice", "--channel", "email", "--target", "not-an-address"], expect: 1)
        _ = try run(["send-otp", "alice", "--channel", "sms", "--target", "+1 555 SECRET"], expect: 1)
        _ = try run(["rename", "alice", "ghost", "New name"], expect: 1)
        _ = try run(["register", "alice", "phone", "--name", "Again phone"], expect: 1)
        _ = try run(["revoke", "alice", "phone", "--actor", "device:phone"], expect: 1)
        _ = try run(["approve", "alice", "nope", "--device", "phone"], expect: 1)
        for _ in 0..<5 { _ = try Rig.cli(["send-otp", "alice", "--channel", "email", "--target", "alice.secret@example.com", "--store", store], environment: env) }
        _ = try run(["send-otp", "alice", "--channel", "email", "--target", "alice.secret@example.com"], expect: 1)
        let key = Array(try #require(FileManager.default.contents(atPath: keys + "/server.key")))
        let export = try Rig.cli(["export", "--store", store], environment: env).stdoutBytes
        return (store, code, key, stderrs, export)
    }

    @Test(arguments: StorageKind.all) func refusalsNeverShowTheCodeTheKeyTheTargetOrTheStorePath(_ storage: StorageKind) throws {
        let s = try Self.session(storage)
        #expect(s.stderrs.count >= 9)
        let keyHex = hexString(s.key)
        let keyBase64 = Data(s.key).base64EncodedString()
        for err in s.stderrs {
            #expect(err.hasPrefix("error: "), "\(err)")
            #expect(!err.contains(s.code), "the OTP code leaks: \(err)")
            #expect(!err.contains(keyHex) && !err.contains(keyBase64), "the server key leaks: \(err)")
            #expect(!err.contains("alice.secret"), "the target leaks: \(err)")
            #expect(!err.contains("SECRET") , "the target leaks: \(err)")
            #expect(!err.contains(s.store) && !err.contains("sec-msg"), "the store path leaks")
            if let password = URLComponents(string: s.store)?.password { #expect(!err.contains(password), "the database password leaks") }
        }
    }

    @Test(arguments: StorageKind.all) func theLogHoldsNeitherTheCodeNorTheKeyNorTheClearTarget(_ storage: StorageKind) throws {
        let s = try Self.session(storage)
        let exported = String(decoding: s.export, as: UTF8.self)
        #expect(exported.contains("a***@example.com"))
        #expect(!exported.contains("alice.secret"))
        #expect(!exported.contains(hexString(s.key)))
        #expect(!exported.contains("\"\(s.code)\""))
        // And the raw store files neither (what an attacker reading data.mdb sees; LMDB's file)
        guard storage == .lmdb else { return }
        let raw = try #require(FileManager.default.contents(atPath: s.store + "/data.mdb"))
        #expect(raw.range(of: Data("alice.secret".utf8)) == nil)
        #expect(raw.range(of: Data(s.key)) == nil)
    }

    @Test func storageFailuresDoNotNameTheStorePath() throws {
        // Given a store path that is a regular file, and one inside an unreadable directory
        let dir = try Rig.tempDir("sec-path")
        let file = dir + "/i-am-a-file"
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        let r = try Rig.cli(["devices", "alice", "--store", file])
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("error: configuration_error:"), "\(r.stderr)")
        #expect(!r.stderr.contains("i-am-a-file"), "\(r.stderr)")
    }

    @Test func codeHashesAreKeyedAndBoundToUserAndOTP() throws {
        let a = OTPSecrets(key: Array(repeating: 1, count: 32)), b = OTPSecrets(key: Array(repeating: 2, count: 32))
        let h = a.codeHash(user: "alice", otpId: "o1", code: "123456")
        #expect(a.matches(user: "alice", otpId: "o1", code: "123456", codeHash: h))
        #expect(!b.matches(user: "alice", otpId: "o1", code: "123456", codeHash: h))
        #expect(!a.matches(user: "bob", otpId: "o1", code: "123456", codeHash: h))
        #expect(!a.matches(user: "alice", otpId: "o2", code: "123456", codeHash: h))
        #expect(!a.matches(user: "alice", otpId: "o1", code: "123457", codeHash: h))
        #expect(!a.matches(user: "alice", otpId: "o1", code: "123456", codeHash: String(h.dropLast())))
    }
}
