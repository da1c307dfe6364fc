import AuthLedger
import Foundation

extension LoopbackClient {
    /// POSTs each (path, JSON body) in turn; returns each request's latency in ms. Every
    /// answer must be 2xx (the benchmark measures accepted commands only).
    func post(_ requests: [(String, String)], token: String) throws -> [Double] {
        defer { close(fd) }
        var lat: [Double] = []
        lat.reserveCapacity(requests.count)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var have = 0
        for (path, body) in requests {
            let s = DispatchTime.now().uptimeNanoseconds
            let request = Array(("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8)
            var sent = 0
            while sent < request.count {
                let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw LedgerError(.storageError, "send failed") }
                sent += n
            }
            var headEnd = -1, bodyLength = -1
            while true {
                if headEnd < 0, have >= 4 {
                    for k in 0...(have - 4) where buffer[k] == 13 && buffer[k + 1] == 10 && buffer[k + 2] == 13 && buffer[k + 3] == 10 {
                        headEnd = k + 4
                        break
                    }
                    if headEnd >= 0 {
                        let head = String(decoding: buffer[0..<headEnd], as: UTF8.self).lowercased()
                        guard head.hasPrefix("http/1.1 2") else {
                            throw LedgerError(.storageError, "\(path) answered \(head.prefix(20)) \(String(decoding: buffer[headEnd..<have], as: UTF8.self))")
                        }
                        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                              let n = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else {
                            throw LedgerError(.storageError, "answer without Content-Length")
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
            buffer.withUnsafeMutableBytes { b in
                if have > used { b.baseAddress!.copyMemory(from: b.baseAddress! + used, byteCount: have - used) }
            }
            have -= used
            lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e6)
        }
        return lat
    }
}
