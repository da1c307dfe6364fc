import AuthLedger
import Foundation
import Testing

/// What one run of the CLI did.
struct CLIRun {
    var status: Int32
    var stdout: String
    var stderr: String
    var json: JSON? { try? JSON.parse(stdout.trimmingCharacters(in: .whitespacesAndNewlines)) }
}

enum CLI {
    /// Runs `executable args` with `stdin`, from the package root.
    static func exec(_ executable: String, _ args: [String], stdin: String? = nil, env: [String: String] = [:]) throws -> CLIRun {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        p.currentDirectoryURL = Support.root
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "AUTHLEDGER_STORE")
        for (k, v) in env { environment[k] = v }
        p.environment = environment
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = inp
        try p.run()
        if let stdin { inp.fileHandleForWriting.write(Data(stdin.utf8)) }
        try inp.fileHandleForWriting.close()
        // Drain stderr concurrently so neither pipe can fill up and block the child.
        let errData = LockedData()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { errData.set(err.fileHandleForReading.readDataToEndOfFile()); group.leave() }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        p.waitUntilExit()
        return CLIRun(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData.get(), as: UTF8.self))
    }

    static func run(_ args: [String], stdin: String? = nil) throws -> CLIRun {
        try exec(Support.binary, args, stdin: stdin)
    }
}

@Suite(.serialized) struct CLITests {
    let store = Support.tempDir("authledger-cli") + "/store"

    func al(_ args: String..., now: String? = nil, stdin: String? = nil) throws -> CLIRun {
        var a = Array(args) + ["--store", store]
        if let now { a += ["--now", now] }
        return try CLI.run(a, stdin: stdin)
    }

    @Test func theBinaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Support.binary), "build with swift build --build-tests (tools/test)")
    }

    @Test func exitCodesAreZeroOneAndTwo() throws {
        // ok
        let ok = try al("register", "alice", "phone", "--name", "My Phone", now: "2026-06-01T09:00:00Z")
        #expect(ok.status == 0)
        #expect(ok.stdout.contains("appended seq 1 device.registered"))
        // refused: exit 1, `error: <code>: …` on stderr, nothing on stdout
        let refused = try al("rename", "alice", "phone", "My Phone", now: "2026-06-01T09:01:00Z")
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("error: name_unchanged: "))
        #expect(refused.stdout.isEmpty)
        // usage: exit 2
        #expect(try al("devices", "alice", "extra-argument").status == 2)
        #expect(try al("devices", "alice", now: "yesterday").status == 2)
        #expect(try al("register", "alice", "tablet").status == 2)  // --name missing
        #expect(try CLI.run(["no-such-command"]).status == 2)
        // a refused command carries the data the caller needs
        let cooling = try al("revoke", "alice", "phone", "--actor", "device:phone", now: "2026-06-01T09:02:00Z")
        #expect(cooling.status == 1 && cooling.stderr.hasPrefix("error: current_device_protected: "))
    }

    /// `authledger bench` runs the benchmark executable built beside the CLI (the CLI itself
    /// links no raw engine) with the same arguments, and keeps its exit codes.
    @Test func benchRunsTheBenchmarkExecutable() throws {
        let run = try CLI.run(["bench", "--events", "10000", "--only", "raw_lmdb_put", "--dir", Support.tempDir("authledger-bench"), "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect((run.json?["results"]?["raw_lmdb_put"]?["events_per_s"]?.integralValue ?? 0) > 0)
        let usage = try CLI.run(["bench", "--events", "5"])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("--events must be at least 10000"))
    }

    @Test func aRefusedImportNamesFileAndLineAndAppendsNothing() throws {
        // Given a store with a valid file imported
        let good = Support.fixture("scenarios/01-first-device-email-link.jsonl").path
        #expect(try al("import", good).status == 0)
        let before = try al("export").stdout
        // When a valid file and a refused one are imported together
        let bad = "Fixtures/refused/rules/time_regression.jsonl"
        let other = Support.fixture("scenarios/02-trusted-device-approval.jsonl").path
        let r = try al("import", other, bad)
        // Then the refusal names the refused file and its own line, and nothing of either was appended
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: time_regression: \(bad) line 3: "))
        #expect(try al("export").stdout == before)
        // And a malformed line names its line too
        let stdinRun = try al("import", "-", stdin: "# comment\n\n{\"type\":\"device.nope\"}\n")
        #expect(stdinRun.status == 1)
        #expect(stdinRun.stderr.hasPrefix("error: invalid_event: - line 3: "))
    }

    @Test func importCountsDuplicatesAndPrintsTheHead() throws {
        let file = Support.fixture("scenarios/04-push-enrollment.jsonl").path
        let first = try al("import", "--json", file)
        #expect(first.json?["appended"] == .int(6))
        #expect(first.json?["head"]?["seq"] == .int(6))
        let again = try al("import", "--json", file)
        #expect(again.json?["appended"] == .int(0))
        #expect(again.json?["duplicates"] == .int(6))
        #expect(again.json?["head"]?["hash"] == first.json?["head"]?["hash"])
        let text = try al("import", file)
        #expect(text.stdout.contains("appended 0 events (6 duplicates skipped); head seq 6 hash "))
    }

    @Test func queriesPrintTheJSONOfTheSpec() throws {
        #expect(try al("import", Support.fixture("scenarios/02-trusted-device-approval.jsonl").path).status == 0)
        let devices = try al("devices", "bob", "--json", "--at", "4", "--current", "desktop", now: "2026-03-02T08:10:00Z").json
        #expect(devices?["position"] == .int(4))
        #expect(devices?["devices"]?.arrayValue?.map { $0["deviceId"]!.stringValue! } == ["phone", "desktop"])
        #expect(devices?["devices"]?.arrayValue?.last?["current"] == .bool(true))
        #expect(devices?["cooling"]?["until"] == .string("2026-03-02T08:12:00.000Z"))
        let cooling = try al("cooling", "bob", "--json", "--as-of", "2026-03-02T08:12:00Z").json
        #expect(cooling?["statusCode"] == .int(100))
        let pending = try al("pending", "bob", "--json", "--as-of", "2026-03-02T08:40:30Z").json
        #expect(pending?.arrayValue?.map { $0["challengeId"]! } == [.string("c-login-3")])
        let requester = try al("challenge", "bob", "c-login-2", "--json", "--as-requester", now: "2026-03-02T09:00:00Z").json
        #expect(requester == .object([("challengeId", .string("c-login-2")), ("status", .string("not_approved"))]))
        let history = try al("history", "bob", "--json", "--at", "3", now: "2026-03-02T09:00:00Z").json
        #expect(history?.arrayValue?.map { $0["seq"]! } == [.int(1), .int(2), .int(3)])
        let unknown = try al("challenge", "bob", "c-none", "--json", now: "2026-03-02T09:00:00Z")
        #expect(unknown.status == 1 && unknown.stderr.hasPrefix("error: challenge_not_found: "))
    }

    @Test func commandsPrintTheirEventsAndIdsAsJSON() throws {
        let reg = try al("register", "carol", "phone", "--name", "Carol's Phone", "--json", now: "2026-06-01T09:00:00Z").json
        #expect(reg == .object([("events", .array([.object([("seq", .int(1)), ("type", .string("device.registered"))])]))]))
        let auto = try al("issue-challenge", "carol", "--device", "phone", "--action", "transaction", "--json", now: "2026-06-01T09:01:00Z").json
        #expect(auto?["events"]?.arrayValue?.map { $0["type"]! } == [.string("challenge.issued"), .string("challenge.approved")])
        #expect(auto?["challengeId"]?.stringValue?.count == 36)
        let sent = try al("send-otp", "carol", "--channel", "sms", "--target", "+15551234567", "--json", now: "2026-06-01T09:02:00Z").json
        let code = try #require(sent?["code"]?.stringValue)
        let otpId = try #require(sent?["otpId"]?.stringValue)
        #expect(code.count == 6)
        let wrong = try al("verify-otp", "carol", otpId, code == "000000" ? "000001" : "000000", "--json", now: "2026-06-01T09:03:00Z")
        #expect(wrong.status == 1)
        #expect(wrong.stderr.hasPrefix("error: otp_invalid: "))
        #expect(!wrong.stderr.contains(code))
        #expect(wrong.json?["events"]?.arrayValue?.first?["type"] == .string("otp.failed"))
        let verified = try al("verify-otp", "carol", otpId, code, "--json", now: "2026-06-01T09:04:00Z").json
        #expect(verified?["grantId"]?.stringValue?.isEmpty == false)
        let policy = try al("set-policy", "--cooling-seconds", "60", "--json", now: "2026-06-01T09:05:00Z").json
        #expect(policy?["events"]?.arrayValue?.first?["type"] == .string("policy.set"))
        let all = try al("revoke-all", "carol", "--json", now: "2026-06-01T09:06:00Z").json
        #expect(all?["sessionEnded"] == .bool(true))
        let export = try al("export", "--user", "carol").stdout
        #expect(!export.contains("+15551234567") && !export.contains("\"\(code)\""))
    }

    @Test func verifyNamesTheFirstTamperedSeq() throws {
        #expect(try al("import", Support.fixture("scenarios/03-device-management-cooling.jsonl").path).status == 0)
        #expect(try al("verify").status == 0)
        // Flip one byte of seq 5's name ("  Carol Phone  "), which only that event holds
        let file = store + "/data.mdb"
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        let needle = Array("  Carol Phone  ".utf8)
        var hits = 0
        for i in 0...(bytes.count - needle.count) where bytes[i..<(i + needle.count)].elementsEqual(needle) {
            bytes[i + 2] ^= 0x20
            hits += 1
        }
        try #require(hits > 0)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let r = try al("verify")
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: tampered: "))
        #expect(r.stderr.contains("seq 5"))
    }

    @Test func exportReimportsIntoAFreshStoreWithTheSameHead() throws {
        for name in ScenarioFixtureTests.scenarios {
            #expect(try al("import", Support.fixture("scenarios/\(name).jsonl").path).status == 0)
        }
        let export = try al("export").stdout
        let other = Support.tempDir("authledger-cli") + "/copy"
        let imported = try CLI.run(["import", "-", "--json", "--store", other], stdin: export)
        #expect(imported.status == 0)
        #expect(try CLI.run(["export", "--store", other]).stdout == export)
        #expect(try al("verify", "--json").json?["head"] == imported.json?["head"])
        let from = try al("export", "--from", "44").stdout.split(separator: "\n")
        #expect(from.count == 2)
    }

    @Test func replayRebuildsWithoutChangingAnswers() throws {
        #expect(try al("import", Support.fixture("scenarios/01-first-device-email-link.jsonl").path).status == 0)
        let before = try al("devices", "alice", "--json", "--include-revoked", now: "2026-03-01T09:35:00Z").stdout
        let replay = try al("replay", "--json")
        #expect(replay.json?["replayed"] == .int(10))
        #expect(try al("devices", "alice", "--json", "--include-revoked", now: "2026-03-01T09:35:00Z").stdout == before)
        #expect(try al("devices", "alice", "--json", "--include-revoked", "--from-scratch", now: "2026-03-01T09:35:00Z").stdout == before)
    }

    @Test func commandsFromSeveralProcessesNeverMoveAStreamBackwards() throws {
        // Given two users with a device each (on the system clock: no --now)
        for user in ["alice", "bob"] {
            #expect(try al("register", user, "phone", "--name", "Phone of \(user)").status == 0)
        }
        // When six processes each run ten commands on both streams at once
        let script = """
        for i in 1 2 3 4 5; do
          "$0" access alice phone --store "$1" || exit 10
          "$0" update-push-token bob phone "tok-$2-$i" --store "$1" || exit 11
        done
        """
        let group = DispatchGroup()
        let statuses = LockedStatuses()
        for worker in 0..<6 {
            group.enter()
            DispatchQueue.global().async {
                let r = try? CLI.exec("/bin/sh", ["-c", script, Support.binary, store, "w\(worker)"])
                statuses.append(r?.status ?? -1, r?.stderr ?? "did not run")
                group.leave()
            }
        }
        group.wait()
        // Then every command succeeded (none refused with time_regression)
        for (status, stderr) in statuses.all { #expect(status == 0, "\(stderr)") }
        // And every stream's at is non-decreasing, seqs have no gaps, and the chain verifies
        let lines = try al("export").stdout.split(separator: "\n")
        #expect(lines.count == 62)
        var last: [String: String] = [:]
        for (i, l) in lines.enumerated() {
            let e = try JSON.parse(String(l))
            #expect(e["seq"] == .int(Int64(i + 1)))
            let user = e["user"]!.stringValue!, at = e["at"]!.stringValue!
            if let prev = last[user] { #expect(prev <= at, "\(user): \(at) after \(prev)") }
            last[user] = at
        }
        #expect(try al("verify").status == 0)
    }

    @Test(arguments: ScenarioFixtureTests.scenarios)
    func theCLIGivesTheExpectedAnswersOfEachScenario(_ name: String) throws {
        // Given the scenario imported with `import`
        let store = Support.tempDir("authledger-cli") + "/store"
        #expect(try CLI.run(["import", Support.fixture("scenarios/\(name).jsonl").path, "--store", store]).status == 0)
        for e in try ScenarioFixtureTests.load(name).expectations {
            // When each expected answer is asked for with the query verb and --json
            var args = [e.query, e.user] + (e.id.map { [$0] } ?? []) + ["--json", "--store", store, "--as-of", e.options.asOf.formatted]
            if let p = e.options.position { args += ["--at", String(p)] }
            if let c = e.options.current { args += ["--current", c] }
            if e.options.includeRevoked { args.append("--include-revoked") }
            if e.options.asRequester { args.append("--as-requester") }
            let r = try CLI.run(args)
            // Then it prints the expected JSON
            #expect(r.status == 0, "\(name) line \(e.line): \(r.stderr)")
            let actual = try #require(r.json, "\(name) line \(e.line): \(r.stdout)")
            if e.exact {
                #expect(actual == e.expected, "\(name) line \(e.line)")
            } else {
                let m = mismatch(e.expected, actual)
                #expect(m == nil, "\(name) line \(e.line): \(m ?? "")")
            }
        }
    }

    /// The queries' tables and lines for a person, exactly (the typed answers printed).
    @Test func theQueriesPrintTheirTablesExactly() throws {
        let store = Support.tempDir("authledger-cli") + "/store"
        let files = ["01-first-device-email-link", "02-trusted-device-approval", "03-device-management-cooling", "04-push-enrollment"]
        #expect(try CLI.run(["import"] + files.map { Support.fixture("scenarios/\($0).jsonl").path } + ["--store", store]).status == 0)
        func out(_ args: String...) throws -> String { try CLI.run(Array(args) + ["--store", store]).stdout }
        #expect(try out("devices", "alice", "--as-of", "2026-03-01T09:40:00Z", "--include-revoked") == """
            alice at position 35, as of 2026-03-01T09:40:00.000Z
            DEVICE  STATUS   NAME            KIND     VIA         REGISTERED                          LAST ACCESS
            iphone  active   Alice's iPhone  mobile   initial     2026-03-01T09:00:00.000Z            2026-03-01T09:01:00.000Z
            laptop  revoked  Work Laptop     desktop  email_link  2026-03-01T09:15:00.123Z            2026-03-01T09:16:00.000Z
            tablet  revoked  Alice's iPad    tablet   -           requested 2026-03-01T09:30:00.000Z  -
            cooling: active until 2026-03-01T09:45:00.000Z (status 146)

            """)
        #expect(try out("devices", "dave", "--as-of", "2026-03-05T00:00:00Z", "--current", "phone") == """
            dave at position 35, as of 2026-03-05T00:00:00.000Z
            DEVICE  STATUS  NAME           KIND    VIA      REGISTERED                LAST ACCESS
            phone*  active  Dave's iPhone  mobile  initial  2026-03-04T10:00:00.000Z  2026-03-04T10:06:00.000Z  push
            cooling: inactive (status 100)

            """)
        #expect(try out("devices", "nobody", "--as-of", "2026-03-05T00:00:00Z") == """
            nobody at position 35, as of 2026-03-05T00:00:00.000Z
            (no devices)
            DEVICE  STATUS  NAME  KIND  VIA  REGISTERED  LAST ACCESS
            cooling: inactive (status 100)

            """)
        #expect(try out("cooling", "alice", "--as-of", "2026-03-01T09:40:00Z") == "alice: cooling: active until 2026-03-01T09:45:00.000Z (status 146)\n")
        #expect(try out("cooling", "carol", "--as-of", "2026-03-03T08:05:00Z") == "carol: cooling: inactive (status 100)\n")
        #expect(try out("pending", "bob", "--as-of", "2026-03-02T08:30:10Z") == """
            CHALLENGE  ACTION  REQUESTED BY  ISSUED                    EXPIRES
            c-login-2  login   tablet        2026-03-02T08:30:00.000Z  2026-03-02T08:31:00.000Z

            """)
        #expect(try out("pending", "bob", "--as-of", "2026-03-02T08:20:30Z") == "(no pending challenges)\n")
        #expect(try out("challenge", "bob", "c-login-2", "--as-of", "2026-03-02T08:35:00Z") == "c-login-2: not_approved (denied)\n")
        #expect(try out("challenge", "bob", "c-login-2", "--as-of", "2026-03-02T08:35:00Z", "--as-requester") == "c-login-2: not_approved\n")
    }

    @Test func theWalkthroughRunsAsWritten() throws {
        // Given the shell block of docs/WALKTHROUGH.md
        let md = try String(contentsOf: Support.root.appendingPathComponent("docs/WALKTHROUGH.md"), encoding: .utf8)
        let start = try #require(md.range(of: "```sh\n"))
        let end = try #require(md.range(of: "```", range: start.upperBound..<md.endIndex))
        let block = String(md[start.upperBound..<end.lowerBound])
        // When it runs in bash, with its own temporary directory
        let r = try CLI.exec("/bin/bash", ["-eu", "-c", block], env: ["TMPDIR": Support.tempDir("authledger-walkthrough")])
        // Then it succeeds and shows what the walkthrough says
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("error: cooling_period_active: a cooling period is active until 2026-06-01T09:16:00.000Z"))
        #expect(r.stdout.contains("\"until\":\"2026-06-01T09:16:00.000Z\",\"statusCode\":146"))
        #expect(r.stdout.contains("appended seq 5 device.renamed"))
        #expect(r.stdout.contains("session ended"))
        #expect(r.stdout.contains("appended seq 9 device.registered"))
        #expect(r.stdout.contains("ok: 9 events verified"))
        #expect(r.stdout.contains("ok: 9 events, head "))
    }
}

final class LockedStatuses: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(Int32, String)] = []
    func append(_ s: Int32, _ e: String) { lock.lock(); items.append((s, e)); lock.unlock() }
    var all: [(Int32, String)] { lock.lock(); defer { lock.unlock() }; return items }
}
