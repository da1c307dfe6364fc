import AuthLedger
import AuthLedgerSharedSignals
import Foundation
import Hummingbird

/// The Shared Signals routes (docs/SHARED-SIGNALS.md): metadata and keys are open
/// (receivers discover them without a token), stream management is `admin`, polling
/// needs `read`.
extension LedgerServer {
    func registerSharedSignalsRoutes(_ t: RouteFamily) {
        let ssf = sharedSignals
        t.on(.get, "/.well-known/ssf-configuration", .open) { _, _ in JSONResponse.make(try ssf.metadata()) }
        t.on(.get, "/ssf/jwks", .open) { _, _ in JSONResponse.make(try ssf.keys().jwks) }
        t.on(.post, "/ssf/keys/rotate", .scope(.admin)) { _, _ in
            let keys = try ssf.keys()
            let kid = try keys.rotate()
            return JSONResponse.make(.object([("kid", .string(kid)), ("published", .array(keys.published.map { .string($0.kid) }))]))
        }

        t.on(.post, "/ssf/streams", .scope(.admin)) { [self] req, _ in
            JSONResponse.make(try await ssf.createStream(try await ssfBody(req)), status: .created)
        }
        t.on(.get, "/ssf/streams", .scope(.admin)) { req, _ in
            JSONResponse.make(try await ssf.readStreams(req.uri.queryParameters.get("stream_id")))
        }
        t.on(.patch, "/ssf/streams", .scope(.admin)) { [self] req, _ in
            JSONResponse.make(try await ssf.updateStream(try await ssfBody(req), replacing: false))
        }
        t.on(.put, "/ssf/streams", .scope(.admin)) { [self] req, _ in
            JSONResponse.make(try await ssf.updateStream(try await ssfBody(req), replacing: true))
        }
        t.on(.delete, "/ssf/streams", .scope(.admin)) { req, _ in
            try await ssf.deleteStream(req.uri.queryParameters.get("stream_id"))
            return Response(status: .noContent)
        }
        t.on(.get, "/ssf/status", .scope(.admin)) { req, _ in
            JSONResponse.make(try await ssf.streamStatus(req.uri.queryParameters.get("stream_id")))
        }
        t.on(.post, "/ssf/status", .scope(.admin)) { [self] req, _ in
            JSONResponse.make(try await ssf.setStatus(try await ssfBody(req)))
        }
        t.on(.post, "/ssf/verify", .scope(.admin)) { [self] req, _ in
            try await ssf.requestVerification(try await ssfBody(req))
            return Response(status: .noContent)
        }
        t.on(.post, "/ssf/poll/{streamId}", .scope(.read)) { [self] req, ctx in
            guard let raw = ctx.parameters.get("streamId"), let id = percentDecoded(raw) else {
                throw LedgerError(.notFound, "no stream", field: "stream_id")
            }
            let body = try await RequestBody.readJSON(req, limit: configuration.maxAppendBytes, optional: true)
            return JSONResponse.make(try await ssf.poll(streamId: id, body: body))
        }
    }

    func ssfBody(_ req: Request) async throws -> JSON {
        try await RequestBody.readJSON(req, limit: configuration.maxBodyBytes, optional: false)!
    }
}
