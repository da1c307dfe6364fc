@_spi(Storage) import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

/// A disk that fills in the middle of a commit, over HTTP: 1,000-event batches on a
/// real small tmpfs until one does not fit.
@Suite(.timeLimit(.minutes(5))) struct FullDiskMidCommitTests {
    @Test func aDiskThatFillsInTheMiddleOfACommitIs507AndNothingOfTheBatchIsAppended() async throws {
        let (mounted, reason) = SmallFilesystem.mount(megabytes: 24)
        guard let fs = mounted else {
            print("SKIPPED aDiskThatFillsInTheMiddleOfACommitIs507AndNothingOfTheBatchIsAppended: \(reason)")
            return
        }
        defer { fs.unmount() }
        // Given the real server over a store on a 24 MB file system, beside 4 MB of ballast
        let ballast = fs.path + "/ballast"
        #expect(FileManager.default.createFile(atPath: ballast, contents: Data(repeating: 0x5A, count: 4 << 20)))
        let s = try await TestServer.start(at: TestStore(lmdbDirectory: fs.path + "/store"))
        do {
            var r = try await s.call(.POST, "/v1/events", token: "admin-token", body: Fixture.array([Fixture.registered("alice", "phone")]))
            #expect(r.status == 201)
            var head = try #require(r["head"]?["seq"]?.intValue)
            var second = 0
            func batch() -> String {
                defer { second += 1000 }
                return Fixture.array((1...1000).map { Fixture.accessed("alice", "phone", second: second + $0, padding: 1000) })
            }
            // When 1,000-event batches (about 1.3 MB each) are appended until one fails
            var refused: (status: Int, error: String?, body: String, freeBefore: Int)?
            var body = batch()
            for _ in 0..<40 {
                let freeBefore = Self.freeBytes(fs.path)
                r = try await s.call(.POST, "/v1/events", token: "admin-token", body: body)
                guard r.status == 201 else {
                    // A batch refused with almost no room left did not fail in the middle: give
                    // it 512 KB of the ballast back (less than it needs) and send it again.
                    if freeBefore < 64 * 1024, let size = Self.fileSize(ballast), size >= 512 * 1024 {
                        try FileHandle(forWritingTo: URL(fileURLWithPath: ballast)).truncate(atOffset: UInt64(size - 512 * 1024))
                        continue
                    }
                    refused = (Int(r.status), r.error, r.body, freeBefore)
                    break
                }
                head = try #require(r["head"]?["seq"]?.intValue)
                body = batch()
            }
            // Then the batch that did not fit, which began with room for part of it, is
            // 507 storage_full (not 503 storage_error)
            let failed = try #require(refused, "24 MB never filled")
            #expect(failed.freeBefore >= 64 * 1024, "the batch began with \(failed.freeBefore) bytes free: not a failure in the middle")
            #expect(failed.status == 507, "\(failed.status) \(failed.body)")
            #expect(failed.error == "storage_full")
            // And nothing of it was appended: the log verifies at the same head
            r = try await s.call(.GET, "/v1/verify", token: "auditor-token")
            #expect(r.status == 200 && r["ok"] == .bool(true), "\(r.body)")
            #expect(r["head"]?["seq"]?.intValue == head)
            // And reads go on
            r = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
            #expect(r.status == 200, "\(r.body)")
            #expect(try await s.call(.GET, "/health", token: nil).status == 200)
            // When space is freed, the same batch is appended whole
            try FileManager.default.removeItem(atPath: ballast)
            r = try await s.call(.POST, "/v1/events", token: "admin-token", body: body)
            #expect(r.status == 201, "\(r.status) \(r.body)")
            #expect(r["head"]?["seq"]?.intValue == head + 1000)
            r = try await s.call(.GET, "/v1/verify", token: "auditor-token")
            #expect(r.status == 200 && r["head"]?["seq"]?.intValue == head + 1000, "\(r.body)")
        } catch {
            try? await s.stop()
            throw error
        }
        try await s.stop()
    }

    static func fileSize(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
    }

    /// The bytes root may still write on the file system of `path`.
    static func freeBytes(_ path: String) -> Int {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return -1 }
        return Int(s.f_bfree) * Int(s.f_frsize)
    }
}
