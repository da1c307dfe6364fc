import Synchronization
import AuthLedgerCore
import Foundation
import Logging

/// The leaf hashes computed beside the replay partitions (written once, read after they all end).
final class LeafBuffer: Sendable {
    private let value = Mutex<Result<[UInt8]?, Error>?>(nil)
    var result: Result<[UInt8]?, Error>? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
