import AuthLedgerFuzzChecks
import Foundation

/// The fuzz targets: each feeds untrusted bytes to one decoder and checks its
/// round-trip properties (`CodecSelfCheck`). Built with `-sanitize=fuzzer -DFUZZING`
/// by tools/fuzz, this is a libFuzzer binary (target chosen by AUTHLEDGER_FUZZ_TARGET);
/// built normally, it replays files: `authledger-fuzz TARGET FILE…`, or writes seeds:
/// `authledger-fuzz seeds DIR`.
enum FuzzTarget: String, CaseIterable {
    case fixture, json, eventsBody = "events-body", storedEvent = "stored-event", storedState = "stored-state", http
    case jwk, jws, linkToken = "link-token"

    /// Runs one input; a violated property stops the process (libFuzzer keeps the input).
    func run(_ bytes: [UInt8]) {
        do {
            switch self {
            case .fixture: try CodecSelfCheck.fixtureLines(bytes)
            case .json: try CodecSelfCheck.json(bytes)
            case .eventsBody: try CodecSelfCheck.eventsBody(bytes)
            case .storedEvent: try CodecSelfCheck.storedEvent(bytes)
            case .storedState: try CodecSelfCheck.storedState(bytes)
            case .http: try HTTPFuzzCheck.run(bytes)
            case .jwk: try ProofSelfCheck.jwk(bytes)
            case .jws: try ProofSelfCheck.jws(bytes)
            case .linkToken: try ProofSelfCheck.linkToken(bytes)
            }
        } catch {
            fatalError("\(rawValue): \(error)")
        }
    }
}

#if FUZZING
let selectedTarget: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["AUTHLEDGER_FUZZ_TARGET"] ?? "fixture"
    guard let t = FuzzTarget(rawValue: name) else { fatalError("unknown AUTHLEDGER_FUZZ_TARGET \(name)") }
    return t
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// SwiftPM's debug builds link an executable's entry point under this name (so tests can
/// link the module); hand over to libFuzzer's driver from there.
@_cdecl("authledger_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var vector = argv
    return LLVMFuzzerRunDriver(&count, &vector) { data, size in fuzzOneInput(data, size) }
}
#else
@main
enum FuzzReplay {
    static func main() throws {
        let args = Array(CommandLine.arguments.dropFirst())
        if args.first == "seeds", args.count == 3 {
            // authledger-fuzz seeds DIR FIXTURE: storage seeds from a fixture file.
            let fixture = Array(FileManager.default.contents(atPath: args[2]) ?? Data())
            let seeds = try CodecSelfCheck.storageSeeds(fixture: fixture)
            for (kind, list) in [("stored-event", seeds.events), ("stored-state", seeds.states)] {
                let dir = args[1] + "/" + kind
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                for (i, bytes) in list.enumerated() { try Data(bytes).write(to: URL(fileURLWithPath: "\(dir)/seed-\(i)")) }
            }
            return
        }
        guard let name = args.first, let target = FuzzTarget(rawValue: name) else {
            print("usage: authledger-fuzz TARGET FILE… | authledger-fuzz seeds DIR FIXTURE; targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
            exit(2)
        }
        for file in args.dropFirst() {
            target.run(Array(FileManager.default.contents(atPath: file) ?? Data()))
        }
        print("\(args.count - 1) inputs ran clean")
    }
}
#endif
