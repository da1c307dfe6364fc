import AuthLedger
import Foundation

/// A minimal blocking HTTP/1.1 client on one keep-alive loopback connection: the
/// benchmark's load generator (the executable has no HTTP client library, and a
/// blocking socket keeps the client's own cost small and steady).
struct LoopbackClient {
    let fd: Int32

    init(port: Int) throws {
        fd = try LoopbackClient.connect(port: port)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A blocking TCP connection to 127.0.0.1:`port`.
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LedgerError(.storageError, "socket failed (errno \(errno))") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port)).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw LedgerError(.storageError, "connect failed (errno \(errno))") }
        return fd
    }

    /// GETs each path in turn; returns each request's latency in ms. Every answer must be
    /// 200 with `expect` body bytes.
    func get(_ paths: [String], token: String, expect: Int) throws -> [Double] {
        try exchange(paths.map { path in "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n" }) { i, head, body in
            guard head.hasPrefix("http/1.1 200") else { throw LedgerError(.storageError, "\(paths[i]) answered \(head.prefix(20))") }
            guard body.count == expect else { throw LedgerError(.storageError, "\(paths[i]): \(body.count) bytes, expected \(expect)") }
        }
    }

    /// POSTs each (path, JSON body) in turn; returns each request's latency in ms. Every
    /// answer must be 2xx (the benchmark measures accepted commands only).
    func post(_ requests: [(String, String)], token: String) throws -> [Double] {
        try exchange(requests.map { path, body in
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        }) { i, head, body in
            guard head.hasPrefix("http/1.1 2") else {
                throw LedgerError(.storageError, "\(requests[i].0) answered \(head.prefix(20)) \(String(decoding: body, as: UTF8.self))")
            }
        }
    }

    /// Sends each request in turn on the connection and reads its answer (the head, then
    /// `Content-Length` bytes of body), which `check` gets with the request's index, the
    /// head in lower case and the body. Returns each request's latency in ms; closes the
    /// connection.
    private func exchange(_ requests: [String], check: (Int, String, ArraySlice<UInt8>) throws -> Void) throws -> [Double] {
        defer { close(fd) }
        var lat: [Double] = []
        lat.reserveCapacity(requests.count)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var have = 0
        for (i, text) in requests.enumerated() {
            let s = DispatchTime.now().uptimeNanoseconds
            let request = Array(text.utf8)
            var sent = 0
            while sent < request.count {
                let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw LedgerError(.storageError, "send failed") }
                sent += n
            }
            var headEnd = -1, bodyLength = -1, head = ""
            while true {
                if headEnd < 0, have >= 4 {
                    for k in 0...(have - 4) where buffer[k] == 13 && buffer[k + 1] == 10 && buffer[k + 2] == 13 && buffer[k + 3] == 10 {
                        headEnd = k + 4
                        break
                    }
                    if headEnd >= 0 {
                        head = String(decoding: buffer[0..<headEnd], as: UTF8.self).lowercased()
                        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                              let n = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else {
                            throw LedgerError(.storageError, "an answer without Content-Length: \(head.prefix(20))")
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
            let used = headEnd + bodyLength
            try check(i, head, buffer[headEnd..<used])
            buffer.withUnsafeMutableBytes { b in
                if have > used { b.baseAddress!.copyMemory(from: b.baseAddress! + used, byteCount: have - used) }
            }
            have -= used
            lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e6)
        }
        return lat
    }
}
