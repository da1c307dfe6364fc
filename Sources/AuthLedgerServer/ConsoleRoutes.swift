import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird

/// The auditor console (docs/CONSOLE.md): the log's verifier key for the page to offer
/// (audit scope), and the console's static files at `/console` (open: the page holds no
/// data; everything it shows comes from the API with the token the user types).
extension LedgerServer {
    func registerConsoleRoutes(_ t: RouteFamily) {
        t.on(.get, "/checkpoint/vkey", .scope(.audit)) { [self] _, _ in
            let signer = try checkpointSigners.signer(ledger, origin: configuration.checkpointOrigin)
            return Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-cache"],
                            body: .init(byteBuffer: ByteBuffer(string: signer.verifierKey + "\n")))
        }
        t.on(.get, "/console", .open) { _, _ in
            try ConsoleAssets.response(for: "index.html")
        }
        t.on(.get, "/console/{asset}", .open) { _, ctx in
            try ConsoleAssets.response(for: ctx.parameters.get("asset") ?? "")
        }
    }
}
