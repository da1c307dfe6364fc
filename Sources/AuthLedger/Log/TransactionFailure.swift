import AuthLedgerCore

/// A storage failure that may spoil the whole write transaction it happened in (a full
/// map, a broken environment), as opposed to one request's own failure: the group-commit
/// writer then fails the transaction instead of answering only that request.
package protocol TransactionFailure: Error {
    var spoilsTransaction: Bool { get }
}
