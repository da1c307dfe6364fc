import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird

/// The console's files (HTML, CSS, JavaScript modules), SwiftPM resources of this target
/// under `Console/`, read once and served with a strict Content-Security-Policy: only
/// this origin's own scripts, styles and connections, no inline script, no framing.
enum ConsoleAssets {
    /// The policy on every console response.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The files by name (`index.html`, `app.js`, …), loaded at first use; empty when the
    /// resource bundle cannot be found (every console path then answers 404).
    static let files: [String: [UInt8]] = load()

    static func load() -> [String: [UInt8]] {
        guard let dir = directory() else { return [:] }
        var out: [String: [UInt8]] = [:]
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        for name in names where contentType(name) != nil {
            if let data = FileManager.default.contents(atPath: dir.appendingPathComponent(name).path) {
                out[name] = Array(data)
            }
        }
        return out
    }

    /// The `Console` folder of this target's resource bundle: beside the executable (the
    /// release binary, the test runner) or, failing that, the source folder of a checkout
    /// (not `Bundle.module`, whose accessor stops the process when it finds nothing).
    static func directory() -> URL? {
        let bundleName = "AuthLedger_AuthLedgerServer.resources"
        var candidates: [URL] = []
        if let exe = Bundle.main.executableURL?.resolvingSymlinksInPath().deletingLastPathComponent() {
            candidates.append(exe.appendingPathComponent(bundleName))
        }
        candidates.append(Bundle.main.bundleURL.appendingPathComponent(bundleName))
        for c in candidates {
            let dir = c.appendingPathComponent("Console")
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent("index.html").path) { return dir }
        }
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Console")
        return FileManager.default.fileExists(atPath: dir.appendingPathComponent("index.html").path) ? dir : nil
    }

    static func contentType(_ name: String) -> String? {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        if name.hasSuffix(".svg") { return "image/svg+xml" }
        return nil
    }

    /// The file `name` with its type and the console's security headers; 404 `not_found`
    /// for any other name (no directories, no `..`: only the loaded names exist).
    static func response(for name: String) throws -> Response {
        guard let bytes = files[name], let type = contentType(name) else {
            throw LedgerError(.notFound, "no console file \(name)")
        }
        var headers: HTTPFields = [.contentType: type, .cacheControl: "no-cache"]
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
