import AuthLedger
import AuthLedgerSharedSignals

/// A refusal only the HTTP API makes: no bearer token, a token without the scope, a body
/// over the limit, a rate limit. The ledger never gives these, so they are not in the
/// core's `ErrorCode`; they are answered in the same `{"error", "message"}` form, with
/// their own stable codes.
struct HTTPRefusal: Error, Sendable, Equatable {
    /// The stable codes of the HTTP API's own refusals.
    enum Code: String, Sendable, CaseIterable {
        /// 401: a missing or unknown bearer token.
        case unauthorized
        /// 403: the token's scope does not allow the request.
        case forbidden
        /// 400: the request body is over the size limit.
        case payloadTooLarge = "payload_too_large"
        /// 429: a limit of the API was reached (a token's request rate or open streams, an
        /// address's failed authentications, concurrent verifications).
        case rateLimited = "rate_limited"
    }

    let code: Code
    let message: String
    /// For a 401 on a presented token: why it was refused (RFC 6750 `error="invalid_token"`
    /// with this as `error_description`); nil when no token was presented.
    var invalidToken: String?

    init(_ code: Code, _ message: String, invalidToken: String? = nil) {
        self.code = code
        self.message = message
        self.invalidToken = invalidToken
    }

    /// A refusal of the Shared Signals transmitter, answered as the API's own with the same
    /// stable code (and so the same status, body and headers).
    init(_ refusal: SharedSignalsRefusal) {
        switch refusal.code {
        case .rateLimited: self.init(.rateLimited, refusal.message)
        }
    }
}
