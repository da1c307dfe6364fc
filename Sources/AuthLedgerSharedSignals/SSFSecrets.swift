import AuthLedger
import Crypto
import Foundation

/// Seals the push `authorization_header` a receiver gives, so that the credential is
/// never in the store in clear: AES-256-GCM under a key kept outside the log
/// (`secret.key`, 32 random bytes, 0600, in the key directory, created crash-safe on
/// first use), bound to the stream id (the additional data) so a sealed value cannot
/// be moved to another stream.
struct SSFSecrets: Sendable {
    let key: SymmetricKey

    static func loadOrCreate(directory: String) throws -> SSFSecrets {
        try SSFKeyFile.ensureDirectory(directory)
        if let b = SSFKeyFile.read(dir: directory, name: "secret.key") {
            guard b.count == 32 else { throw LedgerError(.configurationError, "the shared signals secret key is not 32 bytes") }
            return SSFSecrets(key: SymmetricKey(data: b))
        }
        var g = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }
        if try !SSFKeyFile.create(dir: directory, name: "secret.key", bytes: bytes) {
            // Another process created it first: use theirs.
            guard let b = SSFKeyFile.read(dir: directory, name: "secret.key"), b.count == 32 else {
                throw LedgerError(.storageError, "cannot read the shared signals secret key")
            }
            return SSFSecrets(key: SymmetricKey(data: b))
        }
        return SSFSecrets(key: SymmetricKey(data: bytes))
    }

    func seal(_ value: String, stream: String) throws -> String {
        do {
            let box = try AES.GCM.seal(Array(value.utf8), using: key, authenticating: Array(stream.utf8))
            return box.combined!.base64EncodedString()
        } catch {
            throw LedgerError(.storageError, "cannot seal the authorization header")
        }
    }

    func open(_ sealed: String, stream: String) throws -> String {
        guard let data = Data(base64Encoded: sealed),
              let box = try? AES.GCM.SealedBox(combined: data),
              let plain = try? AES.GCM.open(box, using: key, authenticating: Array(stream.utf8)) else {
            throw LedgerError(.storageError, "the stored authorization header of stream \(stream) cannot be opened (another secret key?)")
        }
        return String(decoding: plain, as: UTF8.self)
    }
}
