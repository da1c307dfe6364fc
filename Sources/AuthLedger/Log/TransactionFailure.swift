import AuthLedgerCore

/// A storage failure that may spoil the whole write transaction it happened in (a full
/// map, a broken environment), as opposed to one request's own failure: the group-commit
/// writer then fails the transaction instead of answering only that request.
package protocol TransactionFailure: Error {
    var spoilsTransaction: Bool { get }
}

/// Thrown by a store's `writeGroup` when it refused a statement of a group whose requests
/// all passed the ledger's checks (a trigger or a limit an operator set: rare): their
/// writes went together, so the refusal is no one request's. The writer runs the group's
/// requests again one per transaction, so that only the request at fault fails with `error`.
package struct GroupStatementRefused: Error {
    package let error: LedgerError
    package init(error: LedgerError) { self.error = error }
}
