import Foundation
import AuthLedger
import AuthLedgerFuzzChecks
import Testing

/// The fuzz targets' regression run inside `swift test`: every committed fuzz input
/// (Fuzz/corpus/TARGET, crashes found become inputs there) and every malformed-input
/// fixture goes through the same round-trip checks as the libFuzzer binary
/// (`CodecSelfCheck`, whose violated property is a thrown `FuzzFailure`: an issue here), plus a few
/// thousand seeded random mutations. The live, coverage-guided fuzzing is tools/fuzz.
@Suite struct FuzzCorpusTests {
    static func files(_ dir: URL) -> [[UInt8]] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.sorted().compactMap { FileManager.default.contents(atPath: dir.appendingPathComponent($0).path).map { Array($0) } }
    }

    static func corpus(_ target: String) -> [[UInt8]] { files(Rig.root.appendingPathComponent("Fuzz/corpus/\(target)")) }

    static let checks: [String: @Sendable ([UInt8]) throws -> Void] = [
        "fixture": CodecSelfCheck.fixtureLines, "json": CodecSelfCheck.json, "events-body": CodecSelfCheck.eventsBody,
        "stored-event": CodecSelfCheck.storedEvent, "stored-state": CodecSelfCheck.storedState,
        "jwk": ProofSelfCheck.jwk, "jws": ProofSelfCheck.jws, "link-token": ProofSelfCheck.linkToken,
    ]

    /// Mutations from a seeded generator (`SplitMix64`), so that a failing one reproduces.
    static func mutate(_ input: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var b = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0 where !b.isEmpty: b[Int.random(in: 0..<b.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            case 1 where !b.isEmpty: b.remove(at: Int.random(in: 0..<b.count, using: &rng))
            case 2: b.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...b.count, using: &rng))
            default:
                if b.count > 2 {
                    let i = Int.random(in: 0..<b.count, using: &rng), j = Int.random(in: i..<b.count, using: &rng)
                    b.insert(contentsOf: b[i...j], at: Int.random(in: 0...b.count, using: &rng))
                }
            }
        }
        return b
    }

    static func seeds(_ target: String) throws -> [[UInt8]] {
        var inputs = corpus(target)
        let storage = try CodecSelfCheck.storageSeeds(fixture: Array(Rig.baseFixture.utf8))
        switch target {
        case "fixture", "json", "events-body":
            inputs += files(Rig.fixtures("refused/input")).filter { $0.count < 1 << 16 }
        case "stored-event": inputs += storage.events
        case "jwk", "jws", "link-token": break
        default: inputs += storage.states
        }
        return inputs
    }

    @Test(arguments: ["fixture", "json", "events-body", "stored-event", "stored-state", "jwk", "jws", "link-token"])
    func committedInputsAndMutationsRunClean(target: String) throws {
        let check = try #require(Self.checks[target])
        let inputs = try Self.seeds(target)
        #expect(inputs.count >= 3, "\(target) has no seeds")
        for input in inputs { try check(input) }
        var rng = SplitMix64(seed: 0xA11CE + UInt64(target.utf8.count))
        let rounds = Rig.knob("AUTHLEDGER_FUZZ_MUTATIONS", 3000)
        // AUTHLEDGER_FUZZ_DUMP=DIR keeps the input under test in DIR/TARGET, so a crash leaves its input behind.
        let dump = ProcessInfo.processInfo.environment["AUTHLEDGER_FUZZ_DUMP"].map { "\($0)/\(target)" }
        for k in 0..<rounds {
            let input = Self.mutate(inputs[k % inputs.count], &rng)
            if let dump { try Data(input).write(to: URL(fileURLWithPath: dump)) }
            try check(input)
        }
    }

    @Test func theStorageSeedsAreDecodableSoMutationsStartFromValidBytes() throws {
        let storage = try CodecSelfCheck.storageSeeds(fixture: Array(Rig.baseFixture.utf8))
        #expect(storage.events.count == 10)
        for bytes in storage.events { _ = try bytes.withUnsafeBytes { try EventCodec.decode($0, seq: 1) } }
    }
}
