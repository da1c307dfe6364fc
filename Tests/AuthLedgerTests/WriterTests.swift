import AuthLedger
import Foundation
import AuthLedgerTestSupport
import Testing

/// Commands through the writer thread (group commit), as the server sends them.
@Suite struct WriterTests {
    @Test(arguments: StorageKind.all) func concurrentCommandsOnTheSystemClockNeverMoveAStreamBackwards(_ storage: StorageKind) async throws {
        // Given two users with a device each
        let ledger = try await storage.freshLedger()
        for user in ["alice", "bob"] {
            _ = try await ledger.perform(.register(user: user, deviceId: "phone", name: "Phone of \(user)", kind: "mobile", platform: nil,
                                                   appId: nil, pushToken: nil, binding: "permanent", via: nil, grantId: nil, challengeId: nil))
        }
        // When 60 commands run at once, 10 of them for a device that does not exist
        let outcomes = await withTaskGroup(of: ErrorCode?.self) { group in
            for i in 0..<60 {
                group.addTask {
                    let user = i % 2 == 0 ? "alice" : "bob"
                    let device = i % 6 == 5 ? "ghost" : "phone"
                    do {
                        _ = try await ledger.perform(.access(user: user, deviceId: device))
                        return nil
                    } catch let e as LedgerError {
                        return e.code
                    } catch {
                        return .storageError
                    }
                }
            }
            var out: [ErrorCode?] = []
            for await o in group { out.append(o) }
            return out
        }
        // Then each refusal refused only itself, and every stream's at is non-decreasing
        #expect(outcomes.filter { $0 == nil }.count == 50)
        #expect(outcomes.filter { $0 == .deviceNotFound }.count == 10)
        let events = try await ledger.events()
        #expect(events.count == 52)
        var last: [String: Timestamp] = [:]
        for e in events {
            if let prev = last[e.event.stream] { #expect(prev <= e.event.at) }
            last[e.event.stream] = e.event.at
        }
        #expect(try await ledger.verify().seq == 52)
    }

    @Test(arguments: StorageKind.all) func aWrongCodeThroughTheWriterKeepsItsFailure(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let now = t("2026-05-01T10:00:00Z")
        let sent = try await ledger.perform(.sendOTP(user: "alice", channel: "email", target: "alice@example.com"), clock: { now })
        let wrong = sent.code == "111111" ? "222222" : "111111"
        do {
            _ = try await ledger.perform(.verifyOTP(user: "alice", otpId: sent.otpId!, code: wrong), clock: { now })
            Issue.record("a wrong code was not refused")
        } catch let e as LedgerError {
            #expect(e.code == .otpInvalid)
            #expect(e.remainingAttempts == 4)
            #expect(e.appended?.map(\.event.type) == [.otpFailed])
            #expect(e.appended?.map(\.seq) == [2])
        }
        #expect(try await ledger.head().seq == 2)
    }

    @Test(arguments: StorageKind.all) func submitIsAtomicAndIdempotentLikeAppend(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let good = try inputs(LedgerTests.phone)
        let first = try await ledger.append(AppendRequest(good))
        let again = try await ledger.append(AppendRequest(good))
        #expect(first.appended.count == 1)
        #expect(again.appended.isEmpty && again.duplicates == 1)
        let bad = try inputs([
            line("device.accessed", at: "2026-03-01T09:01:00Z", data: #"{"deviceId":"phone"}"#),
            line("device.accessed", at: "2026-03-01T09:02:00Z", data: #"{"deviceId":"ghost"}"#),
        ].joined(separator: "\n"))
        await #expect(throws: LedgerError.self) { try await ledger.append(AppendRequest(bad)) }
        #expect(try await ledger.head().seq == 1)
        // An expected version that does not hold is version_conflict, and nothing is appended
        let conflict = await #expect(throws: LedgerError.self) {
            try await ledger.append(AppendRequest(Array(bad.prefix(1)), expectedVersions: ["alice": 0]))
        }
        #expect(conflict?.code == .versionConflict)
        let ok = try await ledger.append(AppendRequest(Array(bad.prefix(1)), expectedVersions: ["alice": 1]))
        #expect(ok.appended.first?.version == 2)
    }
}
