import AuthLedgerCore

/// What a call of ``AuthLedgerClient/AuthLedgerClient`` throws.
public enum AuthLedgerClientError: Error, Sendable, CustomStringConvertible {
    /// The server refused the request with its stable code and the data that goes with it
    /// (`until`, `remainingAttempts`, `field`, …): the same refusal the CLI prints and the
    /// in-process ledger throws.
    case refused(Refusal)
    /// The server could not be reached, or the connection broke before an answer came.
    case transport(String)
    /// The server answered something the contract does not allow (not JSON, a member missing):
    /// another program on that address, or another version of AuthLedger.
    case invalidAnswer(String)
    /// The operation exists in the ledger's API but not over HTTP (the server's sweeper
    /// records expiries; a link is redeemed with its token, ``AuthLedgerClient/redeemLink(_:actor:)``).
    case unsupported(String)

    /// The refusal's stable code, when the server refused.
    public var code: Refusal.Code? { if case let .refused(r) = self { return r.code }; return nil }

    /// `code: message` for a refusal, the kind and what happened otherwise.
    public var description: String {
        switch self {
        case let .refused(r): "\(r.code.rawValue): \(r.message)"
        case let .transport(m): "transport: \(m)"
        case let .invalidAnswer(m): "invalid answer: \(m)"
        case let .unsupported(m): "unsupported: \(m)"
        }
    }
}

/// A refusal as the HTTP API answers it (reference section 5.4): `{"error", "message"}` and the
/// members a caller needs, with the HTTP status and `Retry-After`.
public struct Refusal: Sendable, Equatable {
    /// A stable error code: every code of ``/AuthLedgerCore/ErrorCode`` (the ledger's rules and storage) and
    /// the HTTP API's own (`unauthorized`, `forbidden`, `payload_too_large`, `rate_limited`).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as the API writes it (`cooling_period_active`).
        public var rawValue: String
        /// The code written `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The ledger's code `code`.
        public init(_ code: ErrorCode) { rawValue = code.rawValue }
        /// The ledger's code, when this is one of them.
        public var ledgerCode: ErrorCode? { ErrorCode(rawValue: rawValue) }
        /// The code as the API writes it.
        public var description: String { rawValue }

        /// A missing, unknown or invalid token (401).
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// The token lacks the route's scope (403).
        public static let forbidden = Code(rawValue: "forbidden")
        /// The request body is over the route's limit (400).
        public static let payloadTooLarge = Code(rawValue: "payload_too_large")
        /// Too many failed authentications, requests or open streams (429).
        public static let rateLimited = Code(rawValue: "rate_limited")

        /// Equal to the ledger's code `c`.
        public static func == (a: Code, c: ErrorCode) -> Bool { a.rawValue == c.rawValue }
    }

    /// The HTTP status (400, 401, 403, 404, 409, 410, 423, 429, 503, 507).
    public var status: Int
    /// The stable code: what a program branches on.
    public var code: Code
    /// The server's explanation; its wording may change.
    public var message: String
    /// The end of a cooling window, an expiry, or when one more OTP may be issued.
    public var until: Timestamp?
    /// OTP attempts left (`otp_invalid`).
    public var remainingAttempts: Int?
    /// The offending body member or parameter.
    public var field: String?
    /// The first bad position (`tampered`, `chain_mismatch`).
    public var seq: UInt64?
    /// The refused event of an append (`POST /v1/events`).
    public var index: Int?
    /// `Retry-After`, in seconds (423, 429).
    public var retryAfter: Int?

    /// The refusal as the in-process ledger throws it, when its code is one of the ledger's.
    public var ledgerError: LedgerError? {
        guard let c = code.ledgerCode else { return nil }
        var e = LedgerError(c, message, until: until, remainingAttempts: remainingAttempts, field: field, seq: seq)
        e.index = index
        return e
    }

    /// A refusal read from an error document; nil when `json` is not one.
    init?(status: Int, json: JSON, retryAfter: Int?) {
        guard let code = json["error"]?.stringValue else { return nil }
        self.status = status
        self.code = Code(rawValue: code)
        message = json["message"]?.stringValue ?? ""
        until = json["until"]?.stringValue.flatMap { Timestamp(rfc3339: $0) }
        remainingAttempts = json["remainingAttempts"]?.intValue.map { Int($0) }
        field = json["field"]?.stringValue
        seq = json["seq"]?.intValue.flatMap { $0 >= 0 ? UInt64($0) : nil }
        index = json["index"]?.intValue.map { Int($0) }
        self.retryAfter = retryAfter
    }
}
