import AuthLedger
import Foundation
import Synchronization

/// The OpenID Shared Signals transmitter of a server: metadata, keys, streams (SSF
/// 1.0), SET building (RFC 8417) and poll delivery (RFC 8936). Push delivery
/// (RFC 8935) runs in `SSFPushService`. Delivery reads the log like any feed
/// subscriber: it never sits on the append path, so a slow or dead receiver does
/// not slow appends.
///
/// The keys are loaded (and created) on first use, so a server that never serves
/// Shared Signals never generates one.
public final class SharedSignals: Sendable {
    /// The ledger whose events are delivered.
    public let ledger: Ledger
    /// Issuer, retry and poll settings.
    public let configuration: SharedSignalsConfiguration
    package let store: SSFStreamStore
    let clock: @Sendable () -> Timestamp
    private let issuerValue: Mutex<String?>
    /// The keys and the secrets, loaded (or created) on first use under the lock, so
    /// that two first uses at once (a JWKS request and a push worker) do not create two
    /// keys. Making them is file I/O, no suspension.
    private let made = Mutex<(keys: SSFKeys?, secrets: SSFSecrets?)>((nil, nil))
    /// Rung when a stream changes (the push service reconciles its workers).
    let changes = Doorbell()

    /// Shared Signals over `ledger`; keys are loaded (or created) on first use.
    public init(ledger: Ledger, configuration: SharedSignalsConfiguration, clock: @escaping @Sendable () -> Timestamp = Timestamp.now) {
        self.ledger = ledger
        self.configuration = configuration
        self.store = SSFStreamStore(ledger: ledger)
        self.clock = clock
        issuerValue = Mutex(configuration.issuer.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
    }

    /// The issuer: configured, or the listening address once known.
    public var issuer: String? { issuerValue.withLock { $0 } }

    package func setListeningIssuer(host: String, port: Int) {
        issuerValue.withLock { i in
            if i == nil { i = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
        }
    }

    func requireIssuer() throws -> String {
        guard let i = issuer else { throw LedgerError(.storageError, "the transmitter's issuer is not known yet") }
        return i
    }

    var keyDirectory: String {
        get throws {
            guard let d = configuration.keyDirectory ?? SSFKeys.defaultDirectory(storePath: ledger.path) else {
                throw LedgerError(.configurationError, "no shared signals key directory (--ssf-key-dir or AUTHLEDGER_SSF_KEY_DIR)")
            }
            return d
        }
    }

    /// The signing keys, loaded or created on first use.
    public func keys() throws -> SSFKeys {
        try made.withLock { m in
            if let k = m.keys { return k }
            let k = try SSFKeys(directory: try keyDirectory, retention: configuration.keyRetention)
            m.keys = k
            return k
        }
    }

    func secrets() throws -> SSFSecrets {
        try made.withLock { m in
            if let s = m.secrets { return s }
            let s = try SSFSecrets.loadOrCreate(directory: try keyDirectory)
            m.secrets = s
            return s
        }
    }

    // MARK: Metadata

    /// `GET /.well-known/ssf-configuration`.
    package func metadata() throws -> JSON {
        let i = try requireIssuer()
        return .object([
            ("spec_version", .string("1_0")),
            ("issuer", .string(i)),
            ("jwks_uri", .string(i + "/ssf/jwks")),
            ("delivery_methods_supported", .array([.string(SSFStream.Method.push.rawValue), .string(SSFStream.Method.poll.rawValue)])),
            ("configuration_endpoint", .string(i + "/ssf/streams")),
            ("status_endpoint", .string(i + "/ssf/status")),
            ("verification_endpoint", .string(i + "/ssf/verify")),
            ("critical_subject_members", .array([.string("user")])),
            // Bearer access tokens (RFC 6750) of the OAuth 2.0 framework (RFC 6749), as the
            // CAEP interoperability profile asks: the service's configured tokens.
            ("authorization_schemes", .array([.object([("spec_urn", .string("urn:ietf:rfc:6749"))]),
                                              .object([("spec_urn", .string("urn:ietf:rfc:6750"))])])),
            ("default_subjects", .string("ALL")),
        ])
    }

    // MARK: SETs

    /// The claims of the SET for ledger event `e` on stream `s`, or nil when `e` is
    /// not delivered as a Security Event.
    package func claims(_ s: SSFStream, _ e: RecordedEvent, issuer: String) -> JSON? {
        guard let m = SSFEventMapping.map(e) else { return nil }
        return .object([
            ("iss", .string(issuer)),
            ("jti", .string(s.jti(seq: e.seq))),
            ("iat", .int(clock().milliseconds / 1000)),
            ("aud", .string(s.aud)),
            ("txn", .string(e.id.description)),
            ("sub_id", m.subject),
            ("events", .object([(m.type.rawValue, m.body)])),
        ])
    }

    /// A verification SET (SSF 1.0 section 8.1.4.1): the subject is the stream.
    func verificationClaims(_ s: SSFStream, _ v: SSFStream.Verification, issuer: String) -> JSON {
        .object([
            ("iss", .string(issuer)),
            ("jti", .string(s.jti(verification: v.n))),
            ("iat", .int(clock().milliseconds / 1000)),
            ("aud", .string(s.aud)),
            ("sub_id", SSFEventMapping.opaque(s.id)),
            ("events", .object([(SSFEventType.verification, .object(v.state.map { [("state", JSON.string($0))] } ?? []))])),
        ])
    }

    /// Signs the claims, several at once (the key pool), keeping their order.
    package func sign(_ all: [JSON]) async throws -> [String] {
        let keys = try keys()
        if all.count == 1 { return [try await keys.sign(all[0])] }
        return try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for (i, c) in all.enumerated() { group.addTask { (i, try await keys.sign(c)) } }
            var out = [String](repeating: "", count: all.count)
            for try await (i, jwt) in group { out[i] = jwt }
            return out
        }
    }
}
