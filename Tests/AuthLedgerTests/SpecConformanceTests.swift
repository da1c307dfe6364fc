import AuthLedger
import Foundation
import Testing

/// Black-box checks of the built CLI against docs/REFERENCE.md sections 1–4: each test
/// locks one place where the CLI once deviated from the contract.
@Suite(.serialized) struct SpecConformanceTests {
    let store = Support.tempDir("authledger-spec") + "/store"

    func al(_ args: String..., now: String? = nil, stdin: String? = nil) throws -> CLIRun {
        var a = Array(args) + ["--store", store]
        if let now { a += ["--now", now] }
        return try CLI.run(a, stdin: stdin)
    }

    func keys(_ j: JSON?) -> [String] { j?.objectValue?.map(\.0) ?? [] }

    static let deviceKeys = ["deviceId", "name", "kind", "platform", "binding", "status", "via",
                             "registeredAt", "lastAccessAt", "pushEnrolled", "current", "hasKey", "keyThumbprint"]

    // SPEC 3 devices: each device has exactly the listed members; a device that was never
    // registered (pending, or revoked while pending) also has `requestedAt`.
    @Test func devicesHaveExactlyTheMembersOfTheSpec() throws {
        #expect(try al("import", Support.fixture("scenarios/01-first-device-email-link.jsonl").path).status == 0)
        // 09:12: iphone active, laptop pending
        let early = try #require(try al("devices", "alice", "--json", "--as-of", "2026-03-01T09:12:00Z").json)
        #expect(keys(early) == ["user", "position", "asOf", "devices", "cooling"])
        #expect(keys(early["cooling"]) == ["active", "until", "statusCode"])
        let listed = try #require(early["devices"]?.arrayValue)
        #expect(listed.count == 2)
        #expect(Set(keys(listed[0])) == Set(Self.deviceKeys))
        #expect(Set(keys(listed[1])) == Set(Self.deviceKeys + ["requestedAt"]))
        #expect(listed[1]["requestedAt"] == .string("2026-03-01T09:12:00.000Z"))
        // 09:35 with revoked ones: laptop registered (after a request), tablet revoked while pending
        let later = try #require(try al("devices", "alice", "--json", "--include-revoked", "--as-of", "2026-03-01T09:35:00Z").json)
        let byId = Dictionary(uniqueKeysWithValues: try #require(later["devices"]?.arrayValue).map { ($0["deviceId"]!.stringValue!, $0) })
        #expect(Set(keys(byId["laptop"])) == Set(Self.deviceKeys))
        #expect(byId["laptop"]?["status"] == .string("active"))
        #expect(Set(keys(byId["tablet"])) == Set(Self.deviceKeys + ["requestedAt"]))
        #expect(byId["tablet"]?["status"] == .string("revoked"))
        #expect(byId["tablet"]?["registeredAt"] == .null)
        // A device revoked after registration keeps the members of a registered one
        let end = try #require(try al("devices", "alice", "--json", "--include-revoked", "--as-of", "2026-03-01T09:45:00Z").json)
        let laptop = end["devices"]?.arrayValue?.first { $0["deviceId"] == .string("laptop") }
        #expect(Set(keys(laptop)) == Set(Self.deviceKeys))
        #expect(laptop?["status"] == .string("revoked"))
        #expect(laptop?["via"] == .string("email_link"))
    }

    // SPEC 3 cooling `{"user","active","until","statusCode"}` and challenge
    // `{"challengeId","status","outcome"}`: nothing more.
    @Test func coolingAndChallengeAnswersHaveExactlyTheMembersOfTheSpec() throws {
        #expect(try al("import", Support.fixture("scenarios/02-trusted-device-approval.jsonl").path).status == 0)
        let cooling = try al("cooling", "bob", "--json", "--at", "4", "--as-of", "2026-03-02T08:10:00Z").json
        #expect(cooling == .object([("user", .string("bob")), ("active", .bool(true)),
                                    ("until", .string("2026-03-02T08:12:00.000Z")), ("statusCode", .int(146))]))
        let idle = try al("cooling", "nobody", "--json", now: "2026-03-02T08:10:00Z").json
        #expect(idle == .object([("user", .string("nobody")), ("active", .bool(false)), ("until", .null), ("statusCode", .int(100))]))
        let owner = try al("challenge", "bob", "c-login-2", "--json", now: "2026-03-02T09:00:00Z").json
        #expect(keys(owner) == ["challengeId", "status", "outcome"])
        #expect(owner?["status"] == .string("not_approved"))
        let approved = try al("challenge", "bob", "c-login-1", "--json", now: "2026-03-02T09:00:00Z").json
        #expect(approved == .object([("challengeId", .string("c-login-1")), ("status", .string("approved")), ("outcome", .string("approved"))]))
    }

    // SPEC 1.1/1.2: user keys are 1–128 characters and `$` keys are reserved; a query for
    // one is `invalid_event` (exit 1), not a storage failure. `export --user $system`
    // still gives the policy stream to auditors.
    @Test func queriesRefuseKeysThatCannotBeUsers() throws {
        #expect(try al("set-policy", "--cooling-seconds", "60", now: "2026-06-01T09:00:00Z").status == 0)
        #expect(try al("register", "alice", "phone", "--name", "Alice Phone", now: "2026-06-01T09:01:00Z").status == 0)
        for query in [["devices"], ["cooling"], ["pending"], ["history"], ["challenge"]] {
            for user in ["$system", "", String(repeating: "u", count: 129)] {
                let r = try CLI.run(query + [user] + (query == ["challenge"] ? ["c1"] : []) + ["--json", "--store", store])
                #expect(r.status == 1, "\(query) \(user)")
                #expect(r.stderr.hasPrefix("error: invalid_event: "), "\(query) \(user): \(r.stderr)")
            }
        }
        let policy = try al("export", "--user", "$system").stdout.split(separator: "\n")
        #expect(policy.count == 1 && policy[0].contains("\"policy.set\""))
        let empty = try al("export", "--user", "")
        #expect(empty.status == 1 && empty.stderr.hasPrefix("error: invalid_event: "))
    }

    // SPEC 4: exit 2 for usage — `set-policy` with nothing to set, and no subcommand at all.
    @Test func missingArgumentsAreUsageErrors() throws {
        let r = try al("set-policy", now: "2026-06-01T09:00:00Z")
        #expect(r.status == 2)
        #expect(try al("export").stdout.isEmpty)
        #expect(try CLI.run([]).status == 2)
    }

    // SPEC 1.2: an export edited before re-import (a line dropped, a value changed) is
    // refused with `chain_mismatch` at that line, whatever rule the edit also breaks.
    @Test func anEditedExportIsAChainMismatch() throws {
        #expect(try al("import", Support.fixture("scenarios/01-first-device-email-link.jsonl").path).status == 0)
        let lines = try al("export").stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 10)
        func importFresh(_ ls: [String]) throws -> CLIRun {
            let other = Support.tempDir("authledger-spec") + "/copy"
            return try CLI.run(["import", "-", "--store", other], stdin: ls.joined(separator: "\n") + "\n")
        }
        // Unedited: the same head
        let same = try importFresh(lines)
        #expect(same.status == 0)
        #expect(same.stdout.contains(lines[9].split(separator: "\"hash\":\"").last!.prefix(64)))
        // Line 5 (the laptop's registration) dropped: line 5 now claims seq 6
        let dropped = try importFresh(Array(lines[0..<4] + lines[5...]))
        #expect(dropped.status == 1)
        #expect(dropped.stderr.hasPrefix("error: chain_mismatch: - line 5: "), "\(dropped.stderr)")
        // A name changed to one the rules refuse: still chain_mismatch, at that line
        let edited = lines.enumerated().map { i, l in i == 2 ? l.replacingOccurrences(of: "Work Laptop", with: "WL") : l }
        #expect(edited != lines)
        let r = try importFresh(edited)
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: chain_mismatch: - line 3: "), "\(r.stderr)")
    }

    // SPEC 1.1: a UTF-8 byte order mark before the first line is not part of the JSON.
    @Test func aByteOrderMarkIsSkipped() throws {
        let event = #"{"type":"device.registered","user":"alice","at":"2026-03-01T09:00:00Z","data":{"deviceId":"iphone","name":"Alice iPhone","kind":"mobile","binding":"permanent","via":"initial"}}"#
        let r = try al("import", "-", stdin: "\u{FEFF}" + event + "\n")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("appended 1 events"))
    }

    static let registered = #"{"type":"device.registered","user":"alice","at":"2026-03-01T09:00:00Z","data":{"deviceId":"iphone","name":"Alice iPhone","kind":"mobile","binding":"permanent","via":"initial"}}"#

    // SPEC 1.1: what `import` refuses as `invalid_event`, naming the line, with nothing appended.
    @Test(arguments: [
        "not json",
        #"["device.accessed"]"#,
        #"{"type":"device.unknown","user":"alice","at":"2026-03-01T10:00:00Z","data":{}}"#,
        #"{"user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"}}"#,
        #"{"type":"device.accessed","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"}}"#,
        #"{"type":"device.accessed","user":"alice","data":{"deviceId":"iphone"}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z"}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00","data":{"deviceId":"iphone"}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00+0100","data":{"deviceId":"iphone"}}"#,
        #"{"type":"device.accessed","user":"alice","at":1772359200,"data":{"deviceId":"iphone"}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone","extra":1}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"},"extra":1}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":7}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":""}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"},"id":"not-a-uuid"}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"},"meta":{"actor":"root"}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"},"meta":{"actor":"device:"}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"},"meta":{"ip":1}}"#,
        #"{"type":"device.accessed","user":"$alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"}}"#,
        #"{"type":"device.accessed","user":"","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"}}"#,
        #"{"type":"policy.set","user":"alice","at":"2026-03-01T10:00:00Z","data":{"coolingSeconds":60}}"#,
        #"{"type":"policy.set","at":"2026-03-01T10:00:00Z","data":{"coolingSeconds":"60"}}"#,
        #"{"type":"policy.set","at":"2026-03-01T10:00:00Z","data":{"coolingSeconds":60,"unknownSetting":1}}"#,
        #"{"type":"device.registered","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"ipad","name":"Alice iPad","kind":"tv","binding":"permanent","via":"admin"}}"#,
        #"{"type":"device.registered","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"ipad","name":"Alice iPad","kind":"tablet","binding":"permanent","via":"admin","grantId":"g1"}}"#,
        #"{"type":"device.registered","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"ipad","name":"Alice iPad","kind":"tablet","binding":"permanent","via":"otp"}}"#,
        #"{"type":"challenge.issued","user":"alice","at":"2026-03-01T10:00:00Z","data":{"challengeId":"c1","action":"Login","requestingDeviceId":"ipad","expiresAt":"2026-03-01T10:01:00Z"}}"#,
        #"{"type":"challenge.issued","user":"alice","at":"2026-03-01T10:00:00Z","data":{"challengeId":"c1","action":"login","requestingDeviceId":"ipad","expiresAt":"2026-03-01T10:01:00Z","context":{"ip":1}}}"#,
        #"{"type":"device.accessed","user":"alice","at":"2026-03-01T10:00:00Z","data":{"deviceId":"iphone"},"seq":"2"}"#,
    ])
    func malformedLinesAreInvalidEventAtTheirLine(_ bad: String) throws {
        let r = try al("import", "-", stdin: "# a comment\n" + Self.registered + "\n\n" + bad + "\n")
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: invalid_event: - line 4: "), "\(r.stderr)")
        #expect(try al("export").stdout.isEmpty)
    }

    // SPEC 1.1/1.2: accepted forms and their normalisation.
    @Test func zonesFractionsAndIdsAreNormalised() throws {
        let text = [
            "# times in any zone, ids in any case, CRLF line ends",
            #"{"type":"device.registered","user":"alice","at":"2026-03-01T10:00:00.123456+01:00","data":{"deviceId":"iphone","name":"  Alice iPhone ","kind":"mobile","binding":"permanent","via":"initial"},"id":"0F8FAD5B-D9CB-469F-A165-70867728950E","meta":{"actor":"service:auth","requestId":"r-1"}}"#,
            #"{"type":"policy.set","at":"2026-03-01t09:00:00z","data":{"coolingSeconds":60}}"#,
            #"{"type":"challenge.issued","user":"alice","at":"2026-03-01T04:00:01-05:00","data":{"challengeId":"c1","action":"step_up2","requestingDeviceId":"web","expiresAt":"2026-03-01T09:01:01.9999Z"}}"#,
        ].joined(separator: "\r\n")
        let r = try al("import", "-", "--json", stdin: text)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.json?["appended"] == .int(3))
        let events = try al("export").stdout.split(separator: "\n").map { try JSON.parse(String($0)) }
        #expect(events.map { $0["at"] } == ["2026-03-01T09:00:00.123Z", "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:01.000Z"].map(JSON.string))
        #expect(events[0]["id"] == .string("0f8fad5b-d9cb-469f-a165-70867728950e"))
        #expect(events[0]["data"]?["name"] == .string("  Alice iPhone "))  // recorded as given
        #expect(events[1]["user"] == nil && events[1]["version"] == .int(1))
        #expect(events[2]["data"]?["expiresAt"] == .string("2026-03-01T09:01:01.999Z"))
        // The same id again with the same content (other member order in meta) is a skipped duplicate
        let dup = #"{"type":"device.registered","user":"alice","at":"2026-03-01T09:00:00.123Z","data":{"deviceId":"iphone","name":"  Alice iPhone ","kind":"mobile","binding":"permanent","via":"initial"},"id":"0f8fad5b-d9cb-469f-a165-70867728950e","meta":{"requestId":"r-1","actor":"service:auth"}}"#
        let skipped = try al("import", "-", "--json", stdin: dup)
        #expect(skipped.json?["appended"] == .int(0) && skipped.json?["duplicates"] == .int(1))
        let changed = try al("import", "-", stdin: dup.replacingOccurrences(of: "r-1", with: "r-2"))
        #expect(changed.status == 1 && changed.stderr.hasPrefix("error: duplicate_event_id: - line 1: "))
    }

    // SPEC 1.1/1.2: the command side appends only events `import` accepts, so an export of
    // any store re-imports with the same hashes. Free-text options with control characters
    // (or an empty push token) were appended and made the export un-importable.
    @Test func commandsAppendOnlyWhatImportAccepts() throws {
        let now = "2026-06-01T09:00:00Z"
        #expect(try al("register", "alice", "phone", "--name", "Alice Phone", "--push-token", "tok-1", now: now).status == 0)
        let refused: [[String]] = [
            ["register", "alice", "tablet", "--name", "Alice Tablet", "--via", "admin", "--platform", "i\nos"],
            ["register", "alice", "tablet", "--name", "Alice Tablet", "--via", "admin", "--app-id", "a\tb"],
            ["register", "alice", "tablet", "--name", "Alice Tablet", "--via", "admin", "--push-token", ""],
            ["request-verification", "alice", "laptop", "--platform", "mac\u{7}"],
            ["revoke", "alice", "phone", "--reason", "lost\u{1b}"],
            ["revoke-all", "alice", "--reason", "a\nb"],
            ["issue-challenge", "alice", "--device", "web", "--context", "ip=1\n2"],
            ["update-push-token", "alice", "phone", ""],
        ]
        for args in refused {
            let r = try CLI.run(args + ["--store", store, "--now", now])
            #expect(r.status == 1, "\(args)")
            #expect(r.stderr.hasPrefix("error: invalid_event: "), "\(args): \(r.stderr)")
        }
        #expect(try al("export").stdout.split(separator: "\n").count == 1)
        // What the commands did append re-imports into a fresh store with the same head
        #expect(try al("issue-challenge", "alice", "--device", "web", "--context", "ip=203.0.113.7", "--context", "app=portal", now: now).status == 0)
        #expect(try al("revoke-all", "alice", "--reason", "lost phone", "--actor", "admin:support", now: now).status == 0)
        let export = try al("export").stdout
        let other = Support.tempDir("authledger-spec") + "/copy"
        let imported = try CLI.run(["import", "-", "--json", "--store", other], stdin: export)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try CLI.run(["export", "--store", other]).stdout == export)
    }

    // README quick start: `demo` loads the recorded scenarios (not their .expect.jsonl answers).
    @Test func theDemoLoadsTheScenarios() throws {
        let r = try al("demo")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("05-otp-reregistration.jsonl: appended "))
        #expect(!r.stdout.contains("expect"))
        #expect(try al("verify").status == 0)
    }

    // SPEC 1.1: a user key is 1–128 characters. 128 four-byte characters (512 UTF-8 bytes)
    // overflowed LMDB's 511-byte key limit in the stream index: storage_error on append.
    @Test func theLongestUserKeysAreStored() throws {
        let longest = String(repeating: "\u{1F600}", count: 128), almost = String(repeating: "\u{1F600}", count: 127) + "a"
        for (user, device) in [(longest, "phone"), (almost, "phone")] {
            let r = try al("register", user, device, "--name", "Phone one", now: "2026-06-01T09:00:00Z")
            #expect(r.status == 0, "\(r.stderr)")
        }
        #expect(try al("issue-challenge", longest, "--device", "tablet", now: "2026-06-01T09:00:01Z").status == 0)
        for user in [longest, almost] {
            let devices = try al("devices", user, "--json", now: "2026-06-01T09:00:02Z").json
            #expect(devices?["devices"]?.arrayValue?.count == 1)
        }
        #expect(try al("pending", longest, "--json", now: "2026-06-01T09:00:02Z").json?.arrayValue?.count == 1)
        #expect(try al("pending", almost, "--json", now: "2026-06-01T09:00:02Z").json?.arrayValue?.count == 0)
        #expect(try al("history", longest, "--json", now: "2026-06-01T09:00:02Z").json?.arrayValue?.count == 2)
        #expect(try al("verify").status == 0)
        #expect(try al("replay").status == 0)
        // The sweeper finds the user behind a long key
        let swept = try al("expire-challenges", now: "2026-06-01T10:00:00Z")
        #expect(swept.stdout.contains("challenge.expired"))
        let last = try JSON.parse(String(try al("export").stdout.split(separator: "\n").last!))
        #expect(last["user"] == .string(longest))
        #expect(try al("verify").status == 0)
        #expect(try al("export", "--user", longest).stdout.split(separator: "\n").count == 3)
    }

    // SPEC 4: global options before the subcommand's name, and `$AUTHLEDGER_STORE` as the default store.
    @Test func globalOptionsAndTheStoreFromTheEnvironment() throws {
        let put = try CLI.run(["--store", store, "--now", "2026-06-01T09:00:00Z", "--json", "register", "alice", "phone", "--name", "Alice Phone"])
        #expect(put.status == 0, "\(put.stderr)")
        #expect(put.json?["events"]?.arrayValue?.first?["seq"] == .int(1))
        let before = try CLI.run(["--store", store, "--json", "devices", "alice", "--as-of", "2026-06-01T09:00:00Z"]).json
        let after = try CLI.run(["devices", "alice", "--json", "--store", store, "--as-of", "2026-06-01T09:00:00Z"]).json
        let equals = try CLI.run(["--store=\(store)", "--now=2026-06-01T09:00:00Z", "--json", "devices", "alice"]).json
        #expect(before != nil && before == after && after == equals)
        let fromEnv = try CLI.exec(Support.binary, ["devices", "alice", "--json", "--now", "2026-06-01T09:00:00Z"], env: ["AUTHLEDGER_STORE": store])
        #expect(fromEnv.json == before)
        // --store wins over the environment
        let other = Support.tempDir("authledger-spec") + "/other"
        let explicit = try CLI.exec(Support.binary, ["devices", "alice", "--json", "--store", other, "--now", "2026-06-01T09:00:00Z"], env: ["AUTHLEDGER_STORE": store])
        #expect(explicit.json?["devices"] == .array([]))
    }
}
