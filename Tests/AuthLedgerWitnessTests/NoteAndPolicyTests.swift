import AuthLedger
import Foundation
import Testing
@testable import AuthLedgerWitness

@Suite struct NoteAndPolicyTests {
    @Test func noteSplitsAtTheLastBlankLineAndVerifiesKnownKeysOnly() throws {
        var log = try TestLog()
        log.grow(to: 3)
        let note = try log.checkpoint(3, extensions: ["ext one"])
        let w = try Cosigner(name: "w.example", seed: [UInt8](repeating: 1, count: 32))
        let parsed0 = try SignedNote(parsing: Array(note.utf8))
        let cosigned = note + (try w.cosign(text: parsed0.text, time: 9))
        let parsed = try SignedNote(parsing: Array(cosigned.utf8))
        #expect(parsed.text == "test.example/log\n3\n\(Data(log.root(3).bytes).base64EncodedString())\next one\n")
        #expect(parsed.signatures.count == 2)
        #expect(parsed.verified(by: try log.key) == true)
        #expect(parsed.cosignatures(by: w.verifierKey) == [9])
        let other = try TestLog(origin: "test.example/log", seedByte: 8)
        #expect(parsed.verified(by: try other.key) == nil)
        let cp = try Checkpoint(text: parsed.text)
        #expect(cp.origin == "test.example/log" && cp.size == 3 && cp.root == log.root(3) && cp.extensions == ["ext one"])
        // A flipped byte of the log's signature: the known key's line fails.
        var sigs = parsed.signatures[0].line
        sigs = String(sigs.prefix(30)) + (sigs.dropFirst(30).first == "A" ? "B" : "A") + String(sigs.dropFirst(31))
        let tampered = try SignedNote(parsing: Array((parsed.text + "\n" + sigs).utf8))
        #expect(tampered.verified(by: try log.key) == false)
    }

    @Test(arguments: [
        "no blank line\n— a AAAAAAA=\n", "text\n\n", "text\n\nnot a signature\n", "text\n\n— a b c\n",
        "text\n\n— a !!!!\n", "text\n\n— a AAAA\n", "te\u{1}xt\n\n— a AAAAAAA=\n", "text\n\n— a AAAAAAA=",
    ])
    func malformedNotesAreRefused(_ note: String) {
        #expect(throws: NoteError.self) { try SignedNote(parsing: Array(note.utf8)) }
    }

    @Test(arguments: ["o\n01\nAAAA\n", "o\n1\nAAAA\n", "\n1\n\(Data(count: 32).base64EncodedString())\n",
                      "o\n-1\n\(Data(count: 32).base64EncodedString())\n", "o\n1\n\(Data(count: 32).base64EncodedString())\n\n",
                      "o\n1\n"])
    func malformedCheckpointsAreRefused(_ text: String) {
        #expect(throws: NoteError.self) { try Checkpoint(text: text) }
    }

    static let keys = (1...4).map { try! Cosigner(name: "w\($0).example", seed: [UInt8](repeating: UInt8($0), count: 32)).verifierKey.description }

    @Test func policyQuorumsOfGroups() throws {
        let k = Self.keys
        let p = try WitnessPolicy(parsing: """
            # two of X, and Y
            log \(try TestLog().key)
            witness X1 \(k[0]) http://127.0.0.1:1
            witness X2 \(k[1])
            \twitness X3\t\(k[2])
            group X 2 X1 X2 X3
            witness Y \(k[3])
            group XY all X Y
            quorum XY

            """)
        #expect(p.witnesses.map(\.label) == ["X1", "X2", "X3", "Y"])
        #expect(p.witnesses[0].url == "http://127.0.0.1:1" && p.witnesses[1].url == nil)
        #expect(p.isMet(byWitnessesAt: [0, 2, 3]))
        #expect(!p.isMet(byWitnessesAt: [0, 1]))
        #expect(!p.isMet(byWitnessesAt: [0, 3]))
        #expect(try WitnessPolicy(parsing: "quorum none\n").isMet(byWitnessesAt: []))
        #expect(try WitnessPolicy(parsing: "witness a \(k[0])\nwitness b \(k[1])\ngroup g any a b\nquorum g\n").isMet(byWitnessesAt: [1]))
    }

    @Test(arguments: [
        ("witness a \(keys[0])\nquorum b\n", 2), ("quorum none\nquorum none\n", 2), ("witness a\n", 1),
        ("witness a \(keys[0])\nwitness b \(keys[0])\n", 2), ("witness a \(keys[0])\nwitness a \(keys[1])\n", 2),
        ("witness a \(keys[0])\ngroup g 2 a\n", 2), ("witness a \(keys[0])\ngroup g any a a\n", 2),
        ("witness a \(keys[0])\ngroup g 0 a\n", 2), ("group g any b\n", 1), ("frobnicate\n", 1),
        ("\n\nwitness a \(try! TestLog().key)\n", 3), ("log \(keys[0])\n", 1), ("witness none \(keys[0])\n", 1),
        ("witness a \(keys[0])\ngroup g any none\n", 2), ("witness a \(keys[0])\n", nil),
    ] as [(String, Int?)])
    func policyErrorsNameTheLine(_ text: String, _ line: Int?) {
        do {
            _ = try WitnessPolicy(parsing: text)
            Issue.record("accepted: \(text)")
        } catch let e as NoteError {
            #expect(e.line == line, "\(e)")
        } catch { Issue.record("\(error)") }
    }
}
