import ArgumentParser
import Foundation
import Yams

/// `serve --config FILE`: a YAML or JSON mapping of serve options by their long names
/// (`port: 8443`, `tls-cert: /etc/authledger/tls.pem`, `dev: true`). Each key becomes the
/// option it names, placed before the command line's own arguments, so a flag given on the
/// command line wins; an environment variable the CLI reads (`AUTHLEDGER_STORE`,
/// `AUTHLEDGER_ORIGIN`, `AUTHLEDGER_SSF_ISSUER`, `AUTHLEDGER_SSF_KEY_DIR`) wins over the
/// file's key. Each key is checked by parsing it alone as the option it names, so an
/// unknown key or a bad value is a usage error (exit 2) naming the key.
///
/// Read with Yams (YAML 1.2, whose flow style covers JSON): swift-configuration's file
/// providers would read the file too, but report neither unknown keys nor which key a bad
/// value is under, and argument parsing already owns every option's type and check.
enum ServeConfigFile {
    /// The keys an environment variable overrides, and that variable.
    static let environmentOverrides = [
        "store": "AUTHLEDGER_STORE", "origin": "AUTHLEDGER_ORIGIN",
        "ssf-issuer": "AUTHLEDGER_SSF_ISSUER", "ssf-key-dir": "AUTHLEDGER_SSF_KEY_DIR",
    ]

    /// The file's options as command-line arguments, each checked.
    static func arguments(path: String, environment: [String: String]) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("--config \(path): cannot read it") }
        let loaded: Any?
        do {
            loaded = try Yams.load(yaml: String(decoding: data, as: UTF8.self))
        } catch {
            throw ValidationError("--config \(path): neither YAML nor JSON (\(error))")
        }
        guard let loaded else { return [] }
        guard let map = loaded as? [String: Any] else { throw ValidationError("--config \(path): the file must be a mapping of option names to values") }
        var out: [String] = []
        for key in map.keys.sorted() {
            func refuse(_ why: String) -> ValidationError { ValidationError("--config \(path): key '\(key)': \(why)") }
            guard key != "config", key != "help", !key.hasPrefix("-"), !key.isEmpty else { throw refuse("not a serve option") }
            if let variable = environmentOverrides[key], let v = environment[variable], !v.isEmpty { continue }
            let args: [String]
            switch map[key] {
            case let b as Bool:
                // A flag: true sets it, false leaves it out.
                args = b ? ["--\(key)"] : []
            case let s as String: args = ["--\(key)", s]
            case let i as Int: args = ["--\(key)", String(i)]
            case let d as Double: args = ["--\(key)", String(d)]
            case nil, is NSNull: throw refuse("no value")
            default: throw refuse("a value must be a string, a number or a boolean")
            }
            do {
                _ = try Serve.parse(args)
            } catch {
                let message = Serve.message(for: error)
                throw refuse(message.contains("Unknown option") ? "not a serve option" : message)
            }
            out += args
        }
        return out
    }
}
