import AuthLedger
import Hummingbird

/// How a refusal is answered over HTTP: the status for its code, and a body of
/// `{"error", "message"}` plus what a caller needs (`until`, `remainingAttempts`, `field`, …).
enum APIError {
    static func status(for code: ErrorCode) -> HTTPResponse.Status {
        switch code {
        case .invalidEvent, .invalidName, .signatureInvalid: .badRequest
        case .deviceNotFound, .challengeNotFound, .otpNotFound, .userNotFound, .notFound, .linkInvalid: .notFound
        case .linkExpired: .gone
        case .coolingPeriodActive: HTTPResponse.Status(code: 423, reasonPhrase: "Locked")
        case .otpRateLimited: .tooManyRequests
        case .storageError: .serviceUnavailable
        case .configurationError: .internalServerError
        case .storageFull: HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
        case .duplicateEventId, .chainMismatch, .versionConflict, .timeRegression, .deviceExists, .deviceRevoked,
             .nameUnchanged, .verificationRequired, .grantInvalid, .deviceLimitReached, .currentDeviceProtected,
             .challengeExists, .challengeResolved, .challengeExpired, .challengeNotExpired, .approverNotTrusted,
             .otpExists, .otpExpired, .otpLocked, .otpInvalid, .tampered, .signatureRequired:
            .conflict
        }
    }

    static func body(_ e: LedgerError) -> JSON {
        var m: [(String, JSON)] = [("error", .string(e.code.rawValue)), ("message", .string(e.message))]
        if let until = e.until { m.append(("until", .string(until.formatted))) }
        if let n = e.remainingAttempts { m.append(("remainingAttempts", .int(Int64(n)))) }
        if let field = e.field { m.append(("field", .string(field))) }
        if let seq = e.seq { m.append(("seq", .int(Int64(seq)))) }
        if let index = e.index { m.append(("index", .int(Int64(index)))) }
        return .object(m)
    }

    static func response(_ e: LedgerError) -> Response {
        JSONResponse.make(body(e), status: status(for: e.code))
    }

    /// The HTTP API's own refusals: 401 and 403 with their `WWW-Authenticate`, 400, 429.
    static func response(_ e: HTTPRefusal) -> Response {
        let status: HTTPResponse.Status = switch e.code {
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .payloadTooLarge: .badRequest
        case .rateLimited: .tooManyRequests
        }
        var r = JSONResponse.make(.object([("error", .string(e.code.rawValue)), ("message", .string(e.message))]), status: status)
        switch e.code {
        case .unauthorized:
            r.headers[.wwwAuthenticate] = e.invalidToken.map {
                "Bearer realm=\"authledger\", error=\"invalid_token\", error_description=\"\(quotable($0))\""
            } ?? "Bearer realm=\"authledger\""
        case .forbidden: r.headers[.wwwAuthenticate] = "Bearer realm=\"authledger\", error=\"insufficient_scope\""
        default: break
        }
        return r
    }
}

/// `s` as RFC 6750 allows inside `error_description="…"` (%x20-21 / %x23-5B / %x5D-7E):
/// other characters become `?`.
func quotable(_ s: String) -> String {
    String(String.UnicodeScalarView(s.unicodeScalars.map { c in
        (0x20...0x7E).contains(c.value) && c != "\"" && c != "\\" ? c : "?"
    }))
}

enum JSONResponse {
    static func make(_ json: JSON, status: HTTPResponse.Status = .ok) -> Response {
        var bytes = json.serializedBytes(reserving: 512)
        bytes.append(0x0A)
        let buffer = ByteBuffer(bytes: bytes)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }
}
