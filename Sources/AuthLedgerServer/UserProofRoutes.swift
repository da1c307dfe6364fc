import AuthLedger
import Hummingbird
import Logging
import ServiceLifecycle

/// User proofs over HTTP (reference section 14): a user's proof (read scope), and the index
/// log served like the log (audit scope) — its checkpoint under `<origin>/users` and its
/// C2SP tiles under `/users/tile/…` (the log's tile paths and bodies). With a witness
/// policy, `/users/checkpoint` is the newest index-log checkpoint meeting the quorum, and a
/// proof carries the cosignatures its index-log checkpoint has gathered so far.
extension LedgerServer {
    func registerUserProofRoutes(_ t: RouteFamily) {
        t.on(.get, "/v1/users/{user}/proof", .scope(.read)) { [self] _, ctx in
            let log = try checkpointSigners.signer(ledger, origin: configuration.checkpointOrigin)
            let proof = try await ledger.userProof(try user(ctx))
            let cosigned = witnessCollector == nil ? nil : try await WitnessedSize.usersCheckpoint(ledger, size: proof.entryProof.treeSize)
            return JSONResponse.make(try proof.json(log: log, users: try log.forUsers(), usersCheckpoint: cosigned))
        }
        t.on(.get, "/users/checkpoint", .scope(.audit)) { [self] _, _ in
            if let witnessCollector {
                guard let note = try await witnessCollector.quorumCheckpoint(.users) else {
                    throw LedgerError(.notFound, "no index log checkpoint meets the witness quorum yet")
                }
                return Self.checkpointResponse(ByteBuffer(bytes: note))
            }
            let users = try checkpointSigners.signer(ledger, origin: configuration.checkpointOrigin).forUsers()
            guard try await ledger.usersTreeHead().size > 0 else { throw LedgerError(.notFound, "the index log has no entry yet") }
            return Self.checkpointResponse(ByteBuffer(string: try await ledger.usersCheckpoint(signer: users)))
        }
        t.on(.get, "/users/tile/**", .scope(.audit), documented: "/users/tile/{tilePath+}") { [ledger] _, ctx in
            let tile = try TilePath(ctx.parameters.getCatchAll())
            let body = if let level = tile.level {
                try await ledger.usersHashTile(level: level, index: tile.index, width: tile.width)
            } else {
                try await ledger.usersEntryBundle(index: tile.index, width: tile.width)
            }
            let cache = tile.width == Ledger.tileWidth ? "public, max-age=31536000, immutable" : "no-cache"
            return Response(status: .ok, headers: [.contentType: "application/octet-stream", .cacheControl: cache],
                            body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
    }
}

extension LedgerServer {
    /// Before the log's checkpoint is signed: the index log gets its entry when the log has
    /// grown (so an entry never lags a served checkpoint). A failure is logged, not the
    /// checkpoint's: the log's checkpoint holds without the index.
    func indexBeforeSigning() async {
        do {
            if try await ledger.userIndexLags() { try await ledger.updateUserIndex() }
        } catch {
            logger.error("the user index update before a checkpoint failed", metadata: ["error": "\(error)"])
        }
    }
}
