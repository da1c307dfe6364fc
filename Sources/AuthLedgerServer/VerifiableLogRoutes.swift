import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// The verifiable log over HTTP (SPEC 6), audit scope: the signed checkpoint and the
/// C2SP `tlog-tiles` layout (hash tiles and entry bundles), so any tlog client computes
/// proofs itself, and ready-made proofs as JSON.
extension LedgerServer {
    func registerVerifiableLogRoutes(_ t: RouteFamily) {
        // With a witness policy: the newest checkpoint meeting its quorum (404 until one does),
        // and the newest one at /checkpoint/latest; without, both are the head's.
        t.on(.get, "/checkpoint", .scope(.audit)) { [self] _, _ in
            if let witnessCollector {
                guard let note = try await witnessCollector.quorumCheckpoint() else {
                    throw LedgerError(.notFound, "no checkpoint meets the witness quorum yet (see /checkpoint/latest)")
                }
                return Self.checkpointResponse(ByteBuffer(bytes: note))
            }
            await indexBeforeSigning()
            let note = try await ledger.checkpoint(signer: try checkpointSigners.signer(ledger, origin: configuration.checkpointOrigin))
            return Self.checkpointResponse(ByteBuffer(string: note))
        }
        t.on(.get, "/checkpoint/latest", .scope(.audit)) { [self] _, _ in
            if let witnessCollector { return Self.checkpointResponse(ByteBuffer(bytes: try await witnessCollector.latestCheckpoint())) }
            let note = try await ledger.checkpoint(signer: try checkpointSigners.signer(ledger, origin: configuration.checkpointOrigin))
            return Self.checkpointResponse(ByteBuffer(string: note))
        }
        t.on(.get, "/tile/**", .scope(.audit), documented: "/tile/{tilePath+}") { [ledger, fullTiles] _, ctx in
            let tile = try TilePath(ctx.parameters.getCatchAll())
            let full = tile.width == Ledger.tileWidth
            let body: ByteBuffer
            if let level = tile.level, full {
                body = try await fullTiles.tile(level: level, index: tile.index) {
                    try await ledger.hashTile(level: level, index: tile.index, width: tile.width)
                }
            } else {
                if let level = tile.level {
                    body = ByteBuffer(bytes: try await ledger.hashTile(level: level, index: tile.index, width: tile.width))
                } else {
                    body = ByteBuffer(bytes: try await ledger.entryBundle(index: tile.index, width: tile.width))
                }
            }
            // Full tiles never change; a partial one is superseded as the log grows.
            let cache = full ? "public, max-age=31536000, immutable" : "no-cache"
            return Response(status: .ok, headers: [.contentType: "application/octet-stream", .cacheControl: cache],
                            body: .init(byteBuffer: body))
        }
        t.on(.get, "/v1/proofs/inclusion", .scope(.audit)) { [self] req, _ in
            let q = req.uri.queryParameters
            guard let seqText = q.get("seq") else { throw LedgerError.invalid("seq is required", field: "seq") }
            let seq = try TilePath.number(seqText, field: "seq")
            let size = try q.get("size").map { try TilePath.number($0, field: "size") }
            let p = try await ledger.inclusionProof(seq: seq, size: size)
            let note = try checkpointSigners.signer(ledger, origin: configuration.checkpointOrigin).sign(size: p.treeSize, root: p.root)
            return JSONResponse.make(.object([
                ("treeSize", .int(Int64(p.treeSize))), ("leafIndex", .int(Int64(p.leafIndex))),
                ("proof", .array(p.proof.map { .string(Data($0.bytes).base64EncodedString()) })),
                ("root", .string(Data(p.root.bytes).base64EncodedString())), ("checkpoint", .string(note)),
            ]))
        }
        t.on(.get, "/v1/proofs/consistency", .scope(.audit)) { [self] req, _ in
            let q = req.uri.queryParameters
            guard let fromText = q.get("from") else { throw LedgerError.invalid("from is required", field: "from") }
            guard let toText = q.get("to") else { throw LedgerError.invalid("to is required", field: "to") }
            let p = try await ledger.consistencyProof(from: try TilePath.number(fromText, field: "from"), to: try TilePath.number(toText, field: "to"))
            let note = try checkpointSigners.signer(ledger, origin: configuration.checkpointOrigin).sign(size: p.newSize, root: p.newRoot)
            return JSONResponse.make(.object([
                ("treeSize", .int(Int64(p.newSize))), ("oldSize", .int(Int64(p.oldSize))),
                ("proof", .array(p.proof.map { .string(Data($0.bytes).base64EncodedString()) })),
                ("root", .string(Data(p.newRoot.bytes).base64EncodedString())),
                ("oldRoot", .string(Data(p.oldRoot.bytes).base64EncodedString())), ("checkpoint", .string(note)),
            ]))
        }
    }
}

extension LedgerServer {
    static func checkpointResponse(_ note: ByteBuffer) -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-cache"], body: .init(byteBuffer: note))
    }
}

/// The checkpoint signer, loaded (its key file created) at the first request that needs it.
final class CheckpointSignerCache: Sendable {
    private let cached = Mutex<CheckpointSigner?>(nil)

    func signer(_ ledger: Ledger, origin: String?) throws -> CheckpointSigner {
        try cached.withLock { cached throws -> CheckpointSigner in
            if let cached { return cached }
            let s = try ledger.checkpointSigner(origin: origin)
            cached = s
            return s
        }
    }
}

/// A tile path of C2SP tlog-tiles after `/tile/`: `<L>/<N>[.p/<W>]` or
/// `entries/<N>[.p/<W>]`, `N` in 3-digit elements with `x` prefixes on all but the last
/// (`x001/x234/067` is 1,234,067). Only the canonical spelling is accepted.
struct TilePath: Equatable {
    /// The tile level; nil for an entry bundle.
    var level: Int?
    var index: UInt64
    var width: Int

    init(_ segments: [Substring]) throws(LedgerError) {
        let bad = LedgerError(.notFound, "not a tile path: /tile/\(segments.joined(separator: "/"))")
        var rest = segments
        guard rest.count >= 2 else { throw bad }
        let first = rest.removeFirst()
        if first == "entries" {
            level = nil
        } else {
            guard first.count <= 2, first.allSatisfy({ $0.isASCII && $0.isNumber }), let l = Int(first),
                  String(l) == first, l * Ledger.tileHeight < 64 else { throw bad }
            level = l
        }
        width = Ledger.tileWidth
        if rest.count >= 2, rest[rest.count - 2].hasSuffix(".p") {
            let w = rest.removeLast()
            guard w.count <= 3, w.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(w), String(n) == w,
                  n >= 1, n < Ledger.tileWidth else { throw bad }
            width = n
            rest[rest.count - 1] = rest[rest.count - 1].dropLast(2)
        }
        guard !rest.isEmpty, rest.count <= 7 else { throw bad }
        var n: UInt64 = 0
        for (k, s) in rest.enumerated() {
            let last = k == rest.count - 1
            let digits = last ? s : (s.first == "x" ? s.dropFirst() : "")
            guard digits.count == 3, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let d = UInt64(digits) else { throw bad }
            if k == 0 && !last && d == 0 { throw bad }
            let (m, o1) = n.multipliedReportingOverflow(by: 1000)
            let (sum, o2) = m.addingReportingOverflow(d)
            guard !o1, !o2 else { throw bad }
            n = sum
        }
        index = n
    }

    /// A non-negative decimal query parameter (400 `invalid_event` naming it otherwise).
    static func number(_ text: String, field: String) throws -> UInt64 {
        guard !text.isEmpty, text.count <= 20, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let v = UInt64(text),
              v <= UInt64(Int64.max) else {
            throw LedgerError.invalid("\(field) must be a non-negative integer", field: field)
        }
        return v
    }
}
