import AuthLedger
import AuthLedgerCore
import Crypto
import Foundation
@testable import AuthLedgerWitness

/// A log for the tests, written from RFC 6962 section 2.1 directly (MTH and SUBPROOF
/// recursions over leaves in memory) rather than with the ledger's stored-hash tree.
struct TestLog {
    let signer: CheckpointSigner
    var leaves: [[UInt8]] = []

    init(origin: String = "test.example/log", seedByte: UInt8 = 7) throws {
        signer = try CheckpointSigner(origin: origin, seed: [UInt8](repeating: seedByte, count: 32))
    }

    var key: NoteVerifierKey { get throws { try NoteVerifierKey(parsing: signer.verifierKey) } }

    mutating func grow(to n: Int) {
        while leaves.count < n { leaves.append(Array(SHA256.hash(data: [0] + Array("leaf \(leaves.count)".utf8)))) }
    }

    static func node(_ l: [UInt8], _ r: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: [1] + l + r)) }

    static func split(_ n: Int) -> Int { var k = 1; while k << 1 < n { k <<= 1 }; return k }

    func mth(_ lo: Int, _ hi: Int) -> [UInt8] {
        if hi - lo == 0 { return Array(SHA256.hash(data: [UInt8]())) }
        if hi - lo == 1 { return leaves[lo] }
        let k = TestLog.split(hi - lo)
        return TestLog.node(mth(lo, lo + k), mth(lo + k, hi))
    }

    func root(_ n: Int) -> Hash32 { Hash32(bytes: mth(0, n)) }

    /// RFC 6962 2.1.2 SUBPROOF(m, D[lo..<hi], b).
    func subproof(_ m: Int, _ lo: Int, _ hi: Int, _ b: Bool) -> [[UInt8]] {
        let n = hi - lo
        if m == n { return b ? [] : [mth(lo, hi)] }
        let k = TestLog.split(n)
        if m <= k { return subproof(m, lo, lo + k, b) + [mth(lo + k, hi)] }
        return subproof(m - k, lo + k, hi, false) + [mth(lo, lo + k)]
    }

    func proof(_ m: Int, _ n: Int) -> [[UInt8]] { m == 0 ? [] : subproof(m, 0, n, true) }

    func checkpoint(_ n: Int, extensions: [String] = []) throws -> String {
        let body = "\(signer.origin)\n\(n)\n\(Data(root(n).bytes).base64EncodedString())\n" + extensions.map { $0 + "\n" }.joined()
        return try signer.signNote(body)
    }

    func request(old: Int, size: Int, proof: [[UInt8]]? = nil, note: String? = nil) throws -> [UInt8] {
        let lines = (proof ?? self.proof(old, size)).map { Data($0).base64EncodedString() + "\n" }.joined()
        return Array("old \(old)\n\(lines)\n\(try note ?? checkpoint(size))".utf8)
    }
}
