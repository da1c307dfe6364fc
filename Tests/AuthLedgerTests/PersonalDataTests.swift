@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerCore
import Foundation
import AuthLedgerTestSupport
import Testing

/// SPEC 1.5: personal values hashed as salted commitments, kept apart, and erased for good.
@Suite struct PersonalDataTests {
    static let codeHash = String(repeating: "ab", count: 32)

    /// The hand-written base64url (salts, digests) is Foundation's base64 with `-_` and no padding.
    @Test func base64urlIsFoundationsBase64WithoutPadding() {
        for n in 0...40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ n &* 11 &+ 250) }
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(PersonalData.base64url(bytes) == foundation, "\(n) bytes")
        }
    }

    /// Alice with every kind of personal value, and Bob (who is not erased).
    static let history = [
        line("device.registered", at: "2026-03-01T09:00:00Z",
             data: #"{"deviceId":"iphone","name":"Marguerite's iPhone","kind":"mobile","binding":"permanent","via":"initial","pushToken":"apns-7f3e9c1d-token"}"#,
             meta: #"{"actor":"user","ip":"203.0.113.77"}"#),
        line("challenge.issued", at: "2026-03-01T09:01:00Z",
             data: #"{"challengeId":"c1","action":"login","requestingDeviceId":"laptop","expiresAt":"2026-03-01T09:11:00Z","context":{"ip":"198.51.100.23","location":"Quimper, FR"}}"#),
        line("otp.issued", at: "2026-03-01T09:02:00Z",
             data: #"{"otpId":"o1","channel":"sms","target":"+33***9871","codeHash":"\#(codeHash)","expiresAt":"2026-03-01T09:07:00Z","maxAttempts":5}"#),
        line("device.renamed", at: "2026-03-01T09:03:00Z", data: #"{"deviceId":"iphone","name":"Marguerite's Work Phone"}"#),
        line("device.push_token_updated", at: "2026-03-01T09:04:00Z", data: #"{"deviceId":"iphone","pushToken":"apns-second-token-55"}"#),
        line("device.accessed", at: "2026-03-01T09:05:00Z", data: #"{"deviceId":"iphone"}"#),
        line("device.registered", user: "bob", at: "2026-03-01T09:06:00Z",
             data: #"{"deviceId":"pixel","name":"Bartholomew's Pixel","kind":"mobile","binding":"permanent","via":"initial"}"#),
    ].joined(separator: "\n")

    /// Alice's values, none of which may survive her erasure anywhere in the store.
    static let aliceValues = ["Marguerite's iPhone", "Marguerite's Work Phone", "apns-7f3e9c1d-token", "apns-second-token-55",
                              "203.0.113.77", "198.51.100.23", "Quimper, FR", "+33***9871"]

    static func exportLines(_ ledger: Ledger) async throws -> [JSON] {
        try await ledger.exportText().split(separator: "\n").map { try JSON.parse(Array($0.utf8)) }
    }

    /// Context keys become RFC 6901 pointer tokens (`~` → `~0`, `/` → `~1`) and come back unchanged.
    @Test func contextKeysRoundTripThroughPointerTokens() {
        #expect(PersonalData.escape("a~/b") == "a~0~1b")
        #expect(PersonalData.escape("plain") == "plain")
        for key in ["a/b", "~", "~1", "~0", "a~0/b", "~~1", "/~/", "é/~x"] {
            #expect(PersonalData.unescape(PersonalData.escape(key)) == key)
        }
    }

    @Test(arguments: StorageKind.all) func recordedFormShowsValuesWithDisclosuresAndHashesCommitments(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.history)
        let lines = try await Self.exportLines(ledger)
        let registered = lines[0]
        #expect(registered["data"]?["name"] == .string("Marguerite's iPhone"))
        let disclosures = try #require(registered["disclosures"]?.objectValue)
        #expect(Set(disclosures.map(\.0)) == ["/data/name", "/data/pushToken", "/meta/ip"])
        for (_, salt) in disclosures {
            // 16 bytes, base64url without padding; fresh for each value.
            let s = try #require(salt.stringValue)
            #expect(s.count == 22 && !s.contains("=") && !s.contains("+") && !s.contains("/"))
        }
        #expect(Set(disclosures.compactMap { $0.1.stringValue }).count == 3)
        let context = try #require(lines[1]["disclosures"]?.objectValue).map(\.0)
        #expect(Set(context) == ["/data/context/ip", "/data/context/location"])
        #expect(lines[2]["disclosures"]?["/data/target"] != nil)
        // No personal value: no disclosures, hashed exactly as before commitments existed.
        #expect(lines[5]["disclosures"] == nil)
        let accessed = try #require(try await ledger.events(from: 6, limit: 1).first)
        #expect(accessed.event.personal == nil)
        #expect(RecordedEvent.referenceLeaf(accessed.event, seq: 6, version: 6) == Array(RecordedEvent.leaf(accessed.event, seq: 6, version: 6)))

        // The hashed form carries the commitment in place of each value.
        let first = try #require(try await ledger.events(limit: 1).first)
        let hashed = first.hashedJSON
        let salt = try #require(disclosures.first { $0.0 == "/data/name" }?.1.stringValue)
        #expect(hashed["data"]?["name"] == .object([("_sd", .string(PersonalData.digest(salt: salt, value: "Marguerite's iPhone")))]))
        #expect(hashed["disclosures"] == nil)
        #expect(!String(decoding: hashed.canonicalBytes(), as: UTF8.self).contains("Marguerite"))
        // The direct canonical writer (commitments written in place) agrees with the JSON tree for every event.
        for r in try await ledger.events() {
            #expect(RecordedEvent.referenceLeaf(r.event, seq: r.seq, version: r.version) == Array(RecordedEvent.leaf(r.event, seq: r.seq, version: r.version)))
        }
        #expect(RecordedEvent.computeHash(first.event, seq: 1, version: 1, prev: .zero) == first.hash)
    }

    @Test(arguments: StorageKind.all) func storedEventBytesHoldNoPersonalValue(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.history)
        try await ledger.read(.log()) { r in
            try r.scan(from: 1) { _, bytes in
                let text = String(decoding: bytes, as: UTF8.self)
                for v in Self.aliceValues { #expect(!text.contains(v)) }
                return true
            }
        }
        // … and the answers read them back from the values store.
        let devices = try await ledger.devices(of: "alice", QueryOptions(asOf: t("2026-03-01T10:00:00Z"))).json
        #expect(devices["devices"]?.arrayValue?.first?["name"] == .string("Marguerite's Work Phone"))
        #expect(devices["erased"] == nil)
    }

    @Test(arguments: StorageKind.all) func exportReimportsWithIdenticalHashesAndSalts(_ storage: StorageKind) async throws {
        let a = try await storage.freshLedger()
        try await a.importText(Self.history)
        let text = try await a.exportText()
        let b = try await storage.freshLedger()
        let outcome = try await b.append(try inputs(text))
        #expect(outcome.head == (try await a.head()))
        await #expect(try b.exportText() == text)
        try await b.verify()
    }

    @Test(arguments: StorageKind.all) func editedDisclosureIsAChainMismatch(_ storage: StorageKind) async throws {
        let a = try await storage.freshLedger()
        try await a.importText(Self.history)
        let text = try await a.exportText().replacingOccurrences(of: "Marguerite's iPhone", with: "Marguerite's Phone!")
        let b = try await storage.freshLedger()
        #expect(await refusal { _ = try await b.append(try inputs(text)) }?.code == .chainMismatch)
        #expect(try await b.head() == .empty)
    }

    @Test(arguments: StorageKind.all) func fixtureFormMayNotCarryCommitmentsOrErasures(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let sd = String(repeating: "A", count: 43)
        let commitment = line("device.registered", at: "2026-03-01T09:00:00Z",
                              data: #"{"deviceId":"d","name":{"_sd":"\#(sd)"},"kind":"mobile","binding":"permanent","via":"initial"}"#)
        #expect(await refusal { try await ledger.importText(commitment) }?.code == .invalidEvent)
        #expect(await refusal { try await ledger.importText(line("user.erased", at: "2026-03-01T09:00:00Z", data: "{}")) }?.code == .invalidEvent)
    }

    @Test(arguments: StorageKind.all) func reappendingTheSameIdAndContentIsANoOp(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let id = "0190f0b2-6c1e-7d2a-8f00-000000000001"
        let event = line("device.registered", at: "2026-03-01T09:00:00Z",
                         data: #"{"deviceId":"iphone","name":"Alice's iPhone","kind":"mobile","binding":"permanent","via":"initial"}"#,
                         meta: #"{"ip":"192.0.2.1"}"#, id: id)
        try await ledger.importText(event)
        let again = try await ledger.importText(event)
        #expect(again.appended.isEmpty && again.duplicates == 1)
        let other = event.replacingOccurrences(of: "Alice's iPhone", with: "Alice's iPad")
        #expect(await refusal { try await ledger.importText(other) }?.code == .duplicateEventId)
        let otherIP = event.replacingOccurrences(of: "192.0.2.1", with: "192.0.2.2")
        #expect(await refusal { try await ledger.importText(otherIP) }?.code == .duplicateEventId)
        // After the erasure the value cannot be compared: the same id and other content is still a duplicate.
        _ = try await ledger.erase("alice", now: t("2026-03-01T10:00:00Z"))
        await #expect(try ledger.importText(event).duplicates == 1)
        #expect(await refusal { try await ledger.importText(event.replacingOccurrences(of: "mobile", with: "tablet")) }?.code == .duplicateEventId)
    }

    /// Every file of the store directory, as bytes.
    static func storeFiles(_ path: String) throws -> [(String, Data)] {
        let fm = FileManager.default
        var out: [(String, Data)] = []
        let e = fm.enumerator(atPath: path)
        while let name = e?.nextObject() as? String {
            var isDir: ObjCBool = false
            let full = path + "/" + name
            if fm.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue {
                out.append((name, try Data(contentsOf: URL(fileURLWithPath: full))))
            }
        }
        return out
    }

    static func occurrences(_ value: String, in files: [(String, Data)]) -> [String] {
        let needle = Data(value.utf8)
        return files.filter { $0.1.range(of: needle) != nil }.map(\.0)
    }

    @Test func erasureLeavesNoByteOfTheValuesInAnyFileOfTheStore() async throws {
        let path = Support.tempDir()
        do {
            let ledger = try await Ledger(lmdb: path)
            try await ledger.importText(Self.history)
            // Churn: the values are copied into many pages (and freed pages) before the erasure.
            for k in 0..<200 {
                try await ledger.importText(line("device.accessed", at: "2026-03-01T09:\(10 + k / 60):\(String(format: "%02d", k % 60))Z",
                                           data: #"{"deviceId":"iphone"}"#, meta: #"{"ip":"203.0.113.77"}"#))
            }
            // A settled challenge and a superseded OTP: kept in their indexes, not in the state.
            try await ledger.importText(line("challenge.expired", at: "2026-03-01T09:20:00Z", data: #"{"challengeId":"c1"}"#))
            try await ledger.importText(line("otp.issued", at: "2026-03-01T09:21:00Z",
                                       data: #"{"otpId":"o2","channel":"email","target":"m***@example.org","codeHash":"\#(Self.codeHash)","expiresAt":"2026-03-01T09:26:00Z","maxAttempts":5}"#))
            let before = try Self.storeFiles(path)
            for v in Self.aliceValues { #expect(!Self.occurrences(v, in: before).isEmpty, "the scan finds \(v) before the erasure") }
            let headBefore = try await ledger.head()
            let outcome = try await ledger.erase("alice", reason: "GDPR art. 17 request", actor: "admin:dpo", now: t("2026-03-02T00:00:00Z"))
            #expect(outcome.event.event.type == .userErased)
            #expect(outcome.erasedEvents == 206)
            // Leaves are unchanged: the chain up to the erasure is the same.
            var seen = 0
            try await ledger.forEachEvent(through: headBefore.seq) { e in seen += 1; return true }
            #expect(seen == Int(headBefore.seq))
            #expect(try await ledger.events(from: headBefore.seq, limit: 1).first?.hash == headBefore.hash)
            try await ledger.verify()
        }
        let after = try Self.storeFiles(path)
        for v in Self.aliceValues + ["m***@example.org"] {
            #expect(Self.occurrences(v, in: after).isEmpty, "\(v) remains in \(Self.occurrences(v, in: after))")
        }
        // Bob's values are untouched, and the store still opens and verifies.
        #expect(!Self.occurrences("Bartholomew's Pixel", in: after).isEmpty)
        let reopened = try await Ledger(lmdb: path)
        try await reopened.verify()
    }

    /// Why the erasure rewrites the store: deleting the records alone leaves their bytes in
    /// LMDB's freed pages (copy-on-write), where the byte scan finds them.
    @Test func deletingWithoutRewritingLeavesTheBytesInTheStore() async throws {
        let path = Support.tempDir()
        let ledger = try await Ledger(lmdb: path)
        try await ledger.importText(Self.history)
        let records = try await ledger.write(erased: ["alice"]) { w in try w.erasePersonalValues(user: "alice", before: .max) }
        #expect(records.count == 5)
        #expect(try await ledger.read(ReadLoad(streams: ["alice"])) { r in try r.personalValues(user: "alice", seq: 1) } == nil)
        #expect(!Self.occurrences("Marguerite's iPhone", in: try Self.storeFiles(path)).isEmpty)
    }

    /// Inside the erasure's transaction, reads after it see the values gone, whatever was
    /// read before it (PostgreSQL: the values its group loaded are dropped; the DELETE goes
    /// with the transaction's other writes).
    @Test(arguments: StorageKind.all) func readsAfterAnErasureInItsTransactionSeeTheValuesGone(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.history)
        let (before, erased, after, scanned) = try await ledger.write(erased: ["alice"]) { w in
            let before = try w.personalValues(user: "alice", seq: 1)
            let erased = try w.erasePersonalValues(user: "alice", before: .max)
            var scanned = 0
            try w.scanPersonalValues(user: "alice") { _, _ in scanned += 1; return true }
            return (before, erased, try w.personalValues(user: "alice", seq: 1), scanned)
        }
        #expect(before != nil && erased == [1, 2, 3, 4, 5])
        #expect(after == nil && scanned == 0)
        #expect(try await ledger.read(ReadLoad(streams: ["alice"])) { try $0.personalValues(user: "alice", seq: 1) } == nil)
        #expect(try await ledger.read(ReadLoad(streams: ["bob"])) { try $0.personalValues(user: "bob", seq: 7) } != nil)
    }

    /// A process that dies between the erasure's commit and the rewrite: the next open of
    /// the store finishes the rewrite.
    @Test func anInterruptedPurgeIsFinishedWhenTheStoreIsOpened() async throws {
        let path = Support.tempDir()
        do {
            let ledger = try await Ledger(lmdb: path)
            try await ledger.importText(Self.history)
            try await ledger.write(erased: ["alice"]) { w in
                _ = try w.erasePersonalValues(user: "alice", before: .max)
                try w.putMetaValue(Ledger.purgePendingKey, [1])
            }
            #expect(!Self.occurrences("Marguerite's iPhone", in: try Self.storeFiles(path)).isEmpty)
        }
        let reopened = try await Ledger(lmdb: path)
        #expect(Self.occurrences("Marguerite's iPhone", in: try Self.storeFiles(path)).isEmpty)
        #expect(try await reopened.read(ReadLoad(meta: [Ledger.purgePendingKey])) { try $0.metaValue(Ledger.purgePendingKey) } == nil)
    }

    /// `authledger erase` from the command line.
    @Test func eraseFromTheCLI() async throws {
        let store = Support.tempDir()
        try await Ledger(lmdb: store).importText(Self.history)
        func cli(_ args: [String]) throws -> (Int32, String) {
            let r = try CLI.exec(Support.binary, args)
            return (r.status, r.stdout + r.stderr)
        }
        var (status, text) = try cli(["erase", "alice", "--reason", "request 12", "--actor", "admin:dpo", "--store", store, "--json"])
        #expect(status == 0, "\(text)")
        let answer = try JSON.parse(Array(text.utf8))
        #expect(answer["erased"] == .bool(true) && answer["erasedEvents"] == .int(5))
        (status, text) = try cli(["devices", "alice", "--store", store, "--json"])
        #expect(status == 0 && text.contains("\"erased\":true") && !text.contains("Marguerite"))
        (status, text) = try cli(["erase", "nobody", "--store", store])
        #expect(status == 1 && text.hasPrefix("error: user_not_found"), "\(text)")
        (status, _) = try cli(["verify", "--store", store])
        #expect(status == 0)
        let erased = try await Ledger(lmdb: store).events(types: [.userErased])
        #expect(erased.first?.event.data.string(.reason) == "request 12" && erased.first?.event.actor == "admin:dpo")
    }

    @Test(arguments: StorageKind.all) func answersAfterErasureShowNullAndErased(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.history)
        _ = try await ledger.erase("alice", now: t("2026-03-01T09:06:30Z"))
        let o = QueryOptions(asOf: t("2026-03-01T09:06:40Z"))
        for fromScratch in [false, true] {
            var q = o
            q.fromScratch = fromScratch
            let devices = try await ledger.devices(of: "alice", q).json
            #expect(devices["erased"] == .bool(true))
            let iphone = try #require(devices["devices"]?.arrayValue?.first)
            #expect(iphone["name"] == .null)
            #expect(iphone["pushEnrolled"] == .bool(true))
            #expect(try await ledger.cooling(of: "alice", q).json["erased"] == .bool(true))
            // Time travel to before the erasure: the values are gone there too.
            var early = q
            early.position = 1
            #expect(try await ledger.devices(of: "alice", early).json["devices"]?.arrayValue?.first?["name"] == .null)
            #expect(try await ledger.devices(of: "alice", early).json["erased"] == .bool(true))
            #expect(try await ledger.devices(of: "bob", q).json["devices"]?.arrayValue?.first?["name"] == .string("Bartholomew's Pixel"))
            #expect(try await ledger.devices(of: "bob", q).json["erased"] == nil)
        }
        let pending = try await ledger.pending(of: "alice", QueryOptions(asOf: t("2026-03-01T09:06:40Z"))).json
        #expect(pending.arrayValue?.first?["context"] == .object([("ip", .null), ("location", .null)]))
        try await ledger.verify()
    }

    @Test(arguments: StorageKind.all) func exportAfterErasureShowsCommitmentsAndReimports(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.history)
        let before = try await Self.exportLines(ledger)
        _ = try await ledger.erase("alice", reason: "request", now: t("2026-03-01T09:06:30Z"))
        // A later re-registration of the user is not erased.
        try await ledger.importText(line("device.registered", at: "2026-03-01T09:30:00Z",
                                   data: #"{"deviceId":"tablet","name":"New Tablet","kind":"tablet","binding":"permanent","via":"admin"}"#))
        let text = try await ledger.exportText()
        let lines = try await Self.exportLines(ledger)
        for v in Self.aliceValues { #expect(!text.contains(v)) }
        #expect(lines[0]["disclosures"] == nil)
        #expect(lines[0]["data"]?["name"]?["_sd"] != nil)
        #expect(lines[0]["meta"]?["ip"]?["_sd"] != nil)
        #expect(lines[1]["data"]?["context"]?["location"]?["_sd"] != nil)
        #expect(lines[2]["data"]?["target"]?["_sd"] != nil)
        for k in 0..<7 { #expect(lines[k]["hash"] == before[k]["hash"]) }
        #expect(lines[6]["data"]?["name"] == .string("Bartholomew's Pixel"))
        #expect(lines[7]["type"] == .string("user.erased"))
        #expect(lines[8]["data"]?["name"] == .string("New Tablet") && lines[8]["disclosures"] != nil)
        let answer = try await ledger.devices(of: "alice", QueryOptions(asOf: t("2026-03-01T10:00:00Z"))).json
        let names = answer["devices"]?.arrayValue?.map { $0["name"] }
        #expect(names == [.null, .string("New Tablet")])
        try await ledger.verify()

        // Export → import of the erased store: identical hashes, same answers.
        let copy = try await storage.freshLedger()
        #expect(try await copy.append(try inputs(text)).head == (try await ledger.head()))
        await #expect(try copy.exportText() == text)
        try await copy.verify()
        #expect(try await copy.devices(of: "alice", QueryOptions(asOf: t("2026-03-01T10:00:00Z"))).json == answer)
    }

    /// The Merkle tree's leaves are the chain's: erasure changes no root and no proof.
    @Test(arguments: StorageKind.all) func rootsAndProofsAreTheSameAfterErasure(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        try await ledger.importText(Self.history)
        let head = try await ledger.head().seq
        let root = try await ledger.treeHead(size: head)
        let proofs = try await (1...head).asyncMap { try await ledger.inclusionProof(seq: $0, size: head) }
        _ = try await ledger.erase("alice", now: t("2026-03-01T09:30:00Z"))
        #expect(try await ledger.treeHead(size: head) == root)
        #expect(try await (1...head).asyncMap { try await ledger.inclusionProof(seq: $0, size: head) } == proofs)
        let consistency = try await ledger.consistencyProof(from: head, to: head + 1)
        #expect(MerkleTree.verifyConsistency(oldSize: head, oldRoot: root.root, newSize: head + 1,
                                             newRoot: try await ledger.treeHead().root, proof: consistency.proof))
        try await ledger.verify()
    }

    @Test(arguments: StorageKind.all) func eraseUnknownUserIsRefused(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        #expect(await refusal { _ = try await ledger.erase("nobody") }?.code == .userNotFound)
        #expect(try await ledger.head() == .empty)
    }

    /// Another ledger on the same store (as another process would be) keeps working after
    /// the compaction swapped the store's file: it reopens, and its appends are not lost.
    @Test func anotherOpenLedgerFollowsTheCompactedStore() async throws {
        let path = Support.tempDir()
        let a = try await Ledger(lmdb: path)
        let b = try await Ledger(lmdb: path)
        try await a.importText(Self.history)
        #expect(try await b.devices(of: "alice", QueryOptions(asOf: t("2026-03-01T10:00:00Z"))).json["erased"] == nil)
        _ = try await a.erase("alice", now: t("2026-03-01T09:30:00Z"))
        #expect(try await b.devices(of: "alice", QueryOptions(asOf: t("2026-03-01T10:00:00Z"))).json["erased"] == .bool(true))
        try await b.importText(line("device.accessed", user: "bob", at: "2026-03-01T09:40:00Z", data: #"{"deviceId":"pixel"}"#))
        _ = try await b.append(AppendRequest(try inputs(line("device.accessed", user: "bob", at: "2026-03-01T09:41:00Z", data: #"{"deviceId":"pixel"}"#))))
        #expect(try await a.head().seq == 10)
        let c = try await Ledger(lmdb: path)
        #expect(try await c.head().seq == 10)
        try await c.verify()
    }

    /// The chain re-derived by code we did not write: tools/verify-export.py with the
    /// PyPI `rfc8785` JCS implementation (tools/test installs it), before and after erasure.
    @Test func chainVerifiesWithAnIndependentJCS() async throws {
        let ledger = try await Support.freshLedger()
        try await ledger.importText(Self.history)
        for phase in ["before erasure", "after erasure"] {
            let file = Support.tempDir() + "/export.jsonl"
            try await ledger.exportText().write(toFile: file, atomically: true, encoding: .utf8)
            let python = ProcessInfo.processInfo.environment["AUTHLEDGER_PYTHON"]
                ?? Support.root.appendingPathComponent(".build/python/bin/python3").path
            #expect(FileManager.default.isExecutableFile(atPath: python), "run tools/test (it installs rfc8785 into .build/python)")
            let r = try CLI.exec(python, [Support.root.appendingPathComponent("tools/verify-export.py").path, "--rfc8785"],
                                 stdin: try String(contentsOfFile: file, encoding: .utf8))
            #expect(r.status == 0, "\(phase): \(r.stderr)")
            #expect(r.stdout == "ok: \(try await ledger.head().seq) events, head \(try await ledger.head().hash)\n", "\(phase)")
            if phase == "before erasure" { _ = try await ledger.erase("alice", now: t("2026-03-01T09:30:00Z")) }
        }
    }
}
