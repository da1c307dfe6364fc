/// A witness's answer to `add-checkpoint`: the HTTP status, content type and body.
public struct WitnessAnswer: Sendable, Equatable {
    /// The HTTP status code (200, 400, 403, 404, 409, 422; 500 when the store fails).
    public let status: Int
    /// The body's content type.
    public let contentType: String
    /// The body: the cosignature line(s), the held size, or a sentence saying what is wrong.
    public let body: String

    static func text(_ status: Int, _ message: String) -> WitnessAnswer {
        WitnessAnswer(status: status, contentType: "text/plain; charset=utf-8", body: message + "\n")
    }

    static func conflict(held: UInt64) -> WitnessAnswer {
        WitnessAnswer(status: 409, contentType: "text/x.tlog.size", body: "\(held)\n")
    }
}
