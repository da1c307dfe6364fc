import AuthLedger
import Foundation

/// The push endpoint URLs a stream accepts: `http` or `https`, a DNS name or IPv4
/// address, an optional port (0–65535), a path and a query of URL characters
/// (`%` only before two hex digits), no user info, no fragment, at most 2048
/// characters. openapi.yaml states the same pattern (`SSFEndpointURL`; a test
/// compares them), so a client generated from the document sends only URLs the
/// transmitter takes.
enum SSFEndpointURL {
    /// The pattern, as openapi.yaml writes it (ECMA-262 and Swift regex alike).
    static let pattern = #"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0))?(/([A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)*(\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"#
    /// The longest URL taken.
    static let maxLength = 2048

    // Unicode scalar semantics: the pattern is ASCII, and JSON Schema matches code points.
    // nonisolated(unsafe): a Regex is immutable once built; it is only matched against.
    nonisolated(unsafe) private static let regex: Regex<AnyRegexOutput> = try! Regex(pattern).matchingSemantics(.unicodeScalar)

    /// Whether `url` is a push endpoint URL the transmitter takes.
    static func accepts(_ url: String) -> Bool {
        url.unicodeScalars.count <= maxLength && url.wholeMatch(of: regex) != nil
    }
}
