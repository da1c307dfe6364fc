import AsyncHTTPClient
import AuthLedger
import AuthLedgerWitness
import Foundation
import Logging
import NIOCore
import Synchronization

/// One witness of the policy as the collector sees it for one log: sends it the log's
/// checkpoints (C2SP tlog-witness `add-checkpoint`) and keeps its failures and backoff in memory.
final class WitnessPeer: Sendable {
    /// Why a push did not end with a cosignature.
    struct Failure: Error, CustomStringConvertible {
        let description: String
        /// The witness claims a size larger than the log: not retried.
        var permanent = false
    }

    let witness: WitnessPolicy.Witness
    let log: WitnessedLog
    private let state = Mutex<(failures: Int, lastError: String?, refused: Bool)>((0, nil, false))

    init(witness: WitnessPolicy.Witness, log: WitnessedLog) {
        self.witness = witness
        self.log = log
    }

    var lastError: String? { state.withLock { $0.lastError } }
    var isRefused: Bool { state.withLock { $0.refused } }

    func succeeded() { state.withLock { $0 = (0, nil, false) } }

    /// Records a failure; returns how long to wait before the next try.
    func failed(_ error: any Error, maxBackoff: Duration, logger: Logger) -> Duration {
        let permanent = (error as? Failure)?.permanent ?? false
        let n = state.withLock { s -> Int in
            s.failures += 1
            s.lastError = "\(error)"
            s.refused = s.refused || permanent
            return s.failures
        }
        if permanent {
            logger.error("witnessing: giving up on a witness", metadata: ["witness": "\(witness.label)", "error": "\(error)"])
        } else {
            logger.notice("witnessing: a witness failed", metadata: ["witness": "\(witness.label)", "error": "\(error)"])
        }
        return min(.seconds(1 << min(n - 1, 16)), maxBackoff)
    }

    /// Sends `note` (the log-signed latest checkpoint) until the witness cosigns it (the
    /// cosignature is stored), a 409 has been followed once, or it fails.
    func push(_ note: SignedNote, collector: WitnessCollector, client: HTTPClient) async throws {
        let ledger = collector.ledger
        let checkpoint = try Checkpoint(text: note.text)
        let logSigned = note.text + "\n" + note.signatures.filter { $0.name == checkpoint.origin }.map(\.line).joined()
        for _ in 0..<2 {
            let held = try await log.records.heldSize(ledger, witness.label) ?? 0
            let head = try await log.head(ledger).size
            if held > head { throw Failure(description: "the witness holds size \(held), larger than the log (\(head))", permanent: true) }
            // It holds a newer checkpoint than this one: the next round signs the head.
            if held > checkpoint.size { return }
            let proof = held == 0 || held == checkpoint.size ? [] : try await log.consistency(ledger, held, checkpoint.size)
            let body = "old \(held)\n" + proof.map { Data($0.bytes).base64EncodedString() + "\n" }.joined() + "\n" + logSigned
            var request = HTTPClientRequest(url: witness.url!.hasSuffix("/") ? witness.url! + "add-checkpoint" : witness.url! + "/add-checkpoint")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await client.execute(request, timeout: .init(collector.configuration.requestTimeout))
            let answer = String(buffer: try await response.body.collect(upTo: 64 * 1024))
            switch response.status.code {
            case 200:
                let lines = answer.split(separator: "\n").compactMap { try? SignedNote.signature(String($0)) }
                let valid = lines.filter { Cosigner.verify($0, text: note.text, key: witness.key) != nil }
                guard let line = valid.first else { throw Failure(description: "200 without a valid cosignature of its key") }
                try await log.records.addCosignature(ledger, label: witness.label, size: checkpoint.size, line: line.line,
                                                        text: note.text, policy: collector.configuration.policy)
                return
            case 409:
                guard answer.hasSuffix("\n"), let size = UInt64(answer.dropLast()), String(size) + "\n" == answer else {
                    throw Failure(description: "409 without a size")
                }
                if size > head { throw Failure(description: "the witness holds size \(size), larger than the log (\(head))", permanent: true) }
                try await log.records.setHeld(ledger, witness.label, size)
            default:
                throw Failure(description: "HTTP \(response.status.code): \(answer.prefix(200))")
            }
        }
        throw Failure(description: "409 twice in a row")
    }
}
