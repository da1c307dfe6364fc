import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import AuthLedgerServer
import Foundation
import Logging

/// `tile_serving` of `authledger bench`: full hash tiles from `authledger serve`'s routes
/// over loopback, with an audit token, on keep-alive connections.
extension BenchRun {
    func tileServing(_ ledger: Ledger, connections: Int = 4, requestsPerConnection: Int = 5_000) async throws -> (rate: Double, p50: Double, p99: Double) {
        let head = try ledger.head().seq
        guard head >= 256 else { return (0, 0, 0) }
        let server = try await BenchServer.start(ledger, tokens: "bench-audit-token:audit")
        defer { server.cancel() }
        let port = server.port

        let tiles = head / 256
        let paths: [[String]] = (0..<connections).map { c in
            var rng = SplitMix64(seed: UInt64(100 + c))
            return (0..<requestsPerConnection).map { _ in "/tile/0/" + BenchRun.tileIndexPath(rng.next() % tiles) }
        }
        let t0 = DispatchTime.now().uptimeNanoseconds
        let latencies: [[Double]] = try await withThrowingTaskGroup(of: [Double].self) { g in
            for c in 0..<connections {
                let p = paths[c]
                g.addTask { try await BenchRun.onThread { try LoopbackClient(port: port).get(p, token: "bench-audit-token", expect: 256 * 32) } }
            }
            var all: [[Double]] = []
            for try await l in g { all.append(l) }
            return all
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        await server.stop()
        let all = latencies.flatMap { $0 }.sorted()
        return (Double(all.count) / elapsed, BenchRun.percentile(all, 0.5), BenchRun.percentile(all, 0.99))
    }

    /// `N` as a C2SP tile path: 3-digit elements, `x` before all but the last.
    static func tileIndexPath(_ n: UInt64) -> String {
        var n = n
        var s = String(format: "%03d", Int(n % 1000))
        while n >= 1000 {
            n /= 1000
            s = String(format: "x%03d/", Int(n % 1000)) + s
        }
        return s
    }

    /// Runs blocking work on its own thread (not the cooperative pool the server shares).
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            Thread { c.resume(with: Result { try body() }) }.start()
        }
    }
}

/// A minimal blocking HTTP/1.1 client on one keep-alive loopback connection: the
/// benchmark's load generator (the executable has no HTTP client library, and a
/// blocking socket keeps the client's own cost small and steady).
struct LoopbackClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LedgerError(.storageError, "socket failed") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port)).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw LedgerError(.storageError, "connect failed") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// GETs each path in turn; returns each request's latency in ms. Every answer must be 200 with `expect` body bytes.
    func get(_ paths: [String], token: String, expect: Int) throws -> [Double] {
        defer { close(fd) }
        var lat: [Double] = []
        lat.reserveCapacity(paths.count)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var have = 0
        for path in paths {
            let s = DispatchTime.now().uptimeNanoseconds
            let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8)
            var sent = 0
            while sent < request.count {
                let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw LedgerError(.storageError, "send failed") }
                sent += n
            }
            // Head, then Content-Length bytes of body.
            var headEnd = -1, bodyLength = -1
            while true {
                if headEnd < 0, have >= 4 {
                    for k in 0...(have - 4) where buffer[k] == 13 && buffer[k + 1] == 10 && buffer[k + 2] == 13 && buffer[k + 3] == 10 {
                        headEnd = k + 4
                        break
                    }
                    if headEnd >= 0 {
                        let head = String(decoding: buffer[0..<headEnd], as: UTF8.self).lowercased()
                        guard head.hasPrefix("http/1.1 200") else { throw LedgerError(.storageError, "tile request answered \(head.prefix(20))") }
                        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                              let n = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else {
                            throw LedgerError(.storageError, "tile answer without Content-Length")
                        }
                        bodyLength = n
                    }
                }
                if headEnd >= 0, have >= headEnd + bodyLength { break }
                if have == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
                let n = buffer[have...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw LedgerError(.storageError, "connection closed") }
                have += n
            }
            guard bodyLength == expect else { throw LedgerError(.storageError, "tile of \(bodyLength) bytes, expected \(expect)") }
            let used = headEnd + bodyLength
            buffer.withUnsafeMutableBytes { b in
                if have > used { b.baseAddress!.copyMemory(from: b.baseAddress! + used, byteCount: have - used) }
            }
            have -= used
            lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e6)
        }
        return lat
    }
}
