import Synchronization
import AuthLedgerCore
import Foundation
import Logging

/// A value handed to the replay's partition threads (the progress callback, called only
/// by partition 0, one thread).
// @unchecked: the wrapped closure is not Sendable; only one partition ever calls it.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
