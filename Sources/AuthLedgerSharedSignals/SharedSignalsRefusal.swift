/// A refusal of the Shared Signals transmitter that is none of the ledger's: a limit of
/// the transmitter was reached. The ledger's `ErrorCode` has no such code and this module
/// knows no HTTP; the server answers it in the API's error form with the same stable
/// code as its own refusals (`rate_limited`: 429).
public struct SharedSignalsRefusal: Error, Sendable, Equatable {
    /// The stable codes of the transmitter's own refusals.
    public enum Code: String, Sendable, CaseIterable {
        /// A limit was reached: verification events already waiting on a stream.
        case rateLimited = "rate_limited"
    }

    /// Which limit: the stable code of the answer.
    public let code: Code
    /// What was refused, for a person.
    public let message: String

    /// A refusal with its code and message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
