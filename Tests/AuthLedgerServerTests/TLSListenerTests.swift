import AsyncHTTPClient
import AuthLedger
@testable import AuthLedgerServer
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// HTTPS and client certificates on the listener, with certificates the openssl CLI makes
/// (tools/setup installs it); tools/identity-interop checks the same with Python's ssl.
@Suite(.timeLimit(.minutes(2))) struct TLSListenerTests {
    /// A directory of PEM files: two server CAs, a server certificate of the first for
    /// 127.0.0.1, a client CA and a client certificate of it (SAN URI), one of another CA.
    final class PKI: @unchecked Sendable {
        let dir: String

        init() throws {
            dir = TestServer.temporaryDirectory()
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Self.sh(dir, """
            ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $1.key -out $1.pem -days 2 -subj "/CN=$1"; }
            leaf() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $1.key -out $1.csr -subj "/CN=$1"
                     printf "subjectAltName=$3\\nbasicConstraints=CA:FALSE\\n" > $1.ext
                     openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -out $1.pem -days 2 -extfile $1.ext; }
            ca server-ca; ca server-ca-b; ca client-ca; ca stranger-ca
            leaf server server-ca "IP:127.0.0.1,DNS:localhost"
            leaf server-b server-ca-b "IP:127.0.0.1,DNS:localhost"
            leaf mailer client-ca "URI:spiffe://example.org/mailer,DNS:mailer.internal"
            leaf batch client-ca "DNS:batch.internal"
            leaf forged stranger-ca "URI:spiffe://example.org/mailer"
            cp server.pem live.pem; cp server.key live.key
            """)
        }

        func path(_ name: String) -> String { dir + "/" + name }

        /// Installs the certificate `name` as the one the server's files name.
        func install(_ name: String) throws { try Self.sh(dir, "cp \(name).pem live.pem && cp \(name).key live.key") }

        static func sh(_ dir: String, _ script: String) throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/bash")
            p.arguments = ["-euc", script]
            p.currentDirectoryURL = URL(fileURLWithPath: dir)
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            guard p.terminationStatus == 0 else { throw TestFailure("openssl failed (\(p.terminationStatus))") }
        }

        /// A client trusting `ca`, presenting `certificate` when given.
        func client(trusting ca: String, certificate: String? = nil) throws -> HTTPClient {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(path(ca + ".pem")))
            if let certificate {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(path(certificate + ".pem")).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: path(certificate + ".key"), format: .pem))
            }
            return HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        }

        deinit { try? FileManager.default.removeItem(atPath: dir) }
    }

    static func call(_ client: HTTPClient, _ port: Int, _ path: String, method: HTTPMethod = .GET, body: String? = nil,
                     token: String? = nil, timeout: Int64 = 30) async throws -> HTTPResult {
        let req = TestServer.request(base: "https://127.0.0.1:\(port)", method, path, token: token, body: body, headers: [])
        let resp = try await client.execute(req, timeout: .seconds(timeout))
        return HTTPResult(status: Int(resp.status.code), headers: resp.headers, body: String(buffer: try await resp.body.collect(upTo: 1 << 20)))
    }

    /// Runs `body`, then shuts the clients down (also when it throws: a client dropped
    /// without shutdown is a fatal error in AsyncHTTPClient).
    static func using(_ clients: [HTTPClient], _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            for c in clients { try? await c.shutdown() }
            throw error
        }
        for c in clients { try await c.shutdown() }
    }

    static func refused(_ client: HTTPClient, _ port: Int) async -> Bool {
        do {
            // Short: the client retries a failed handshake until its deadline.
            _ = try await call(client, port, "/health", timeout: 3)
            return false
        } catch {
            return true
        }
    }

    @Test func httpsAndClientCertificatesMappedToScopesAndRecorded() async throws {
        let pki = try PKI()
        try await withServer(configure: {
            $0.tls = TLSFiles(certificate: pki.path("live.pem"), key: pki.path("live.key"), clientCA: pki.path("client-ca.pem"))
            $0.tokens = try! TokenStore(parsing: "reader=reader-token:read\ncert=spiffe://example.org/mailer:read+write\ncert=batch.internal:read")
        }) { s in
            let mailer = try pki.client(trusting: "server-ca", certificate: "mailer")
            let batch = try pki.client(trusting: "server-ca", certificate: "batch")
            let anonymous = try pki.client(trusting: "server-ca")
            let forged = try pki.client(trusting: "server-ca", certificate: "forged")
            try await Self.using([mailer, batch, anonymous, forged]) {

            var r = try await Self.call(mailer, s.port, "/v1/users/ann/devices", method: .POST, body: #"{"deviceId":"a1","name":"Ann phone"}"#)
            #expect(r.status == 201, "\(r.body)")
            r = try await Self.call(batch, s.port, "/v1/users/ann/devices", method: .POST, body: #"{"deviceId":"a2","name":"Ann tablet"}"#)
            #expect(r.status == 403)
            r = try await Self.call(batch, s.port, "/v1/users/ann/history")
            let meta = r.json?.arrayValue?.first?["meta"]
            #expect(meta?["caller"]?.stringValue == "cert:spiffe://example.org/mailer")
            #expect(meta?["actor"]?.stringValue == "service:spiffe://example.org/mailer")
            // A bearer token beside the certificate is the token's.
            r = try await Self.call(batch, s.port, "/v1/users/ann/devices", method: .POST, body: #"{"deviceId":"a3","name":"Ann laptop"}"#, token: "reader-token")
            #expect(r.status == 403)
            // No certificate, or one of another CA: the handshake fails; the server stays up.
            #expect(await Self.refused(anonymous, s.port))
            #expect(await Self.refused(forged, s.port))
            #expect(try await Self.call(mailer, s.port, "/health").status == 200)
            }
        }
    }

    @Test func reloadSwapsTheCertificateForNewConnectionsAndKeepsItWhenTheFileIsBroken() async throws {
        let pki = try PKI()
        try await withServer(configure: {
            $0.tls = TLSFiles(certificate: pki.path("live.pem"), key: pki.path("live.key"))
        }) { s in
            let oldTrust = try pki.client(trusting: "server-ca")
            let newTrust = try pki.client(trusting: "server-ca-b")
            let fresh = try pki.client(trusting: "server-ca-b")
            try await Self.using([oldTrust, newTrust, fresh]) {
            #expect(try await Self.call(oldTrust, s.port, "/health").status == 200)
            #expect(await Self.refused(newTrust, s.port))
            try pki.install("server-b")
            #expect(s.server.reload().isEmpty)
            #expect(try await Self.call(newTrust, s.port, "/health").status == 200)
            // A broken file: the reload says so and the certificate in force stays.
            try "not a certificate\n".write(toFile: pki.path("live.pem"), atomically: true, encoding: .utf8)
            let failures = s.server.reload()
            #expect(failures.count == 1 && failures[0].contains("--tls-cert"), "\(failures)")
            // A client that never connected before: a new handshake, with the certificate in force.
            #expect(try await Self.call(fresh, s.port, "/health").status == 200)
            }
        }
    }
}
