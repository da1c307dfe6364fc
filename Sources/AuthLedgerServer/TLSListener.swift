import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The listener's TLS (`serve --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]`): PEM
/// files, HTTPS only, TLS 1.2 or later; with a client CA, every connection must present a
/// certificate it issued (mTLS).
public struct TLSFiles: Sendable, Equatable {
    /// The server's certificate chain (PEM, leaf first).
    public var certificate: String
    /// Its private key (PEM).
    public var key: String
    /// The CA certificates (PEM) client certificates must chain to; nil: no client certificates.
    public var clientCA: String?

    /// TLS with these files.
    public init(certificate: String, key: String, clientCA: String? = nil) {
        self.certificate = certificate
        self.key = key
        self.clientCA = clientCA
    }

    /// A server context from the files as they are now; a ``ServerConfigurationError``
    /// naming the file that cannot be used.
    func makeContext() throws(ServerConfigurationError) -> NIOSSLContext {
        let chain: [NIOSSLCertificate], key: NIOSSLPrivateKey
        do { chain = try NIOSSLCertificate.fromPEMFile(certificate) } catch {
            throw ServerConfigurationError("--tls-cert \(certificate): not a readable PEM certificate (\(error))")
        }
        guard !chain.isEmpty else { throw ServerConfigurationError("--tls-cert \(certificate): no certificate in it") }
        do { key = try NIOSSLPrivateKey(file: self.key, format: .pem) } catch {
            throw ServerConfigurationError("--tls-key \(self.key): not a readable PEM private key (\(error))")
        }
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        if let clientCA {
            let roots: [NIOSSLCertificate]
            do { roots = try NIOSSLCertificate.fromPEMFile(clientCA) } catch {
                throw ServerConfigurationError("--tls-client-ca \(clientCA): not a readable PEM certificate (\(error))")
            }
            guard !roots.isEmpty else { throw ServerConfigurationError("--tls-client-ca \(clientCA): no certificate in it") }
            tls.trustRoots = .certificates(roots)
            // Clients must present a certificate chaining to these roots; the name in it is
            // an identity mapped to scopes, not a host name.
            tls.certificateVerification = .noHostnameVerification
            tls.sendCANameList = true
        }
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw ServerConfigurationError("the TLS certificate and key cannot be used together (\(error))")
        }
    }
}

/// The TLS context new connections get; swapped by a reload (connections already open
/// keep the context they started with).
final class TLSContextBox: Sendable {
    private let current: Mutex<NIOSSLContext>
    /// Whether connections must present a client certificate (`--tls-client-ca`).
    let clientCertificates: Bool
    init(_ context: NIOSSLContext, clientCertificates: Bool) {
        current = Mutex(context)
        self.clientCertificates = clientCertificates
    }
    var context: NIOSSLContext { current.withLock { $0 } }
    func replace(_ context: NIOSSLContext) { current.withLock { $0 = context } }
}

/// HummingbirdTLS's `TLSChannel`, with the context read from a ``TLSContextBox`` for each
/// new connection so that SIGHUP can swap certificates without closing a connection.
struct ReloadableTLSChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let box: TLSContextBox

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: box.context))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Base.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension ReloadableTLSChannel: HTTPChannelHandler where Base: HTTPChannelHandler {
    var responder: HTTPChannelHandler.Responder { base.responder }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 over TLS with the context of `box` at each connection.
    static func reloadableTLS(_ box: TLSContextBox) -> HTTPServerBuilder {
        .init { responder in ReloadableTLSChannel(base: HTTP1Channel(responder: responder), box: box) }
    }
}

/// The identity of a client certificate: its first SAN URI, else its first SAN DNS name.
enum ClientCertificateIdentity {
    static func of(_ certificate: NIOSSLCertificate) -> String? {
        var dns: String?
        for name in certificate._subjectAlternativeNames() {
            switch name.nameType {
            case .uri:
                return String(decoding: name.contents, as: UTF8.self)
            case .dnsName where dns == nil:
                dns = String(decoding: name.contents, as: UTF8.self)
            default:
                continue
            }
        }
        return dns
    }

    /// The identity of the peer of `channel` (nil: no TLS or no certificate, or one without SAN URI or DNS name).
    static func peer(of channel: any Channel) async -> String? {
        guard let cert = try? await channel.nioSSL_peerCertificate().get() else { return nil }
        return of(cert)
    }
}
