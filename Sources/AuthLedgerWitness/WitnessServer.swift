import Foundation
import Hummingbird
import Logging
import Prometheus
import ServiceLifecycle

/// `authledger witness` over HTTP: `POST /add-checkpoint` (C2SP `tlog-witness`),
/// `GET /health` and `GET /metrics` (Prometheus). Bodies over ``maxBody`` bytes are
/// refused with 413 before they are read in full.
public struct WitnessServer: Sendable {
    /// The largest request body accepted: a note of ``SignedNote/maxBytes`` and 63 proof lines.
    public static let maxBody = SignedNote.maxBytes + 4096

    let witness: Witness
    let registry = PrometheusCollectorRegistry()

    /// A server for `witness`.
    public init(witness: Witness) { self.witness = witness }

    /// The Hummingbird application listening on `host`:`port`; `onListening` gets the bound port.
    public func application(host: String, port: Int, logger: Logger,
                            onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router()
        let witness = self.witness, registry = self.registry
        router.post("/add-checkpoint") { request, context -> Response in
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: WitnessServer.maxBody)
            } catch {
                registry.makeCounter(name: "authledger_witness_requests_total", labels: [("code", "413")]).increment()
                return WitnessServer.response(.text(413, "the request body is over \(WitnessServer.maxBody) bytes"))
            }
            let answer = await witness.addCheckpoint(Array(buffer: body))
            registry.makeCounter(name: "authledger_witness_requests_total", labels: [("code", "\(answer.status)")]).increment()
            return WitnessServer.response(answer)
        }
        router.get("/health") { _, _ -> Response in
            let ok = (try? witness.store.all()) != nil
            return Response(status: ok ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: ok ? "{\"status\":\"ok\"}\n" : "{\"status\":\"storage_error\"}\n")))
        }
        router.get("/metrics") { _, _ -> Response in
            for (origin, held) in (try? witness.store.all()) ?? [:] {
                registry.makeGauge(name: "authledger_witness_checkpoint_size", labels: [("origin", origin)]).set(Double(held.size))
            }
            var out: [UInt8] = []
            registry.emit(into: &out)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(bytes: out)))
        }
        return Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil),
                           onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) }, logger: logger)
    }

    /// Runs the server on `host` and a port the kernel picks, in a task of its own (tests,
    /// benchmarks): the port, and the service group whose graceful shutdown stops it.
    public func startInBackground(host: String = "127.0.0.1", logger: Logger) async throws -> (port: Int, group: ServiceGroup) {
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let group = ServiceGroup(configuration: .init(services: [application(host: host, port: 0, logger: logger) { listening.yield($0) }],
                                                      logger: logger))
        Task { try await group.run() }
        var it = ports.makeAsyncIterator()
        guard let port = await it.next() else { throw NoteError("the witness server did not start") }
        return (port, group)
    }

    static func response(_ a: WitnessAnswer) -> Response {
        Response(status: HTTPResponse.Status(code: a.status), headers: [.contentType: a.contentType],
                 body: .init(byteBuffer: ByteBuffer(string: a.body)))
    }
}
