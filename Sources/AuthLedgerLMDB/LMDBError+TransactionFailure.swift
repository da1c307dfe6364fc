import AuthLedgerCore
import CLMDB
import Crypto
import Foundation
import LMDB

extension LMDBError: TransactionFailure {
    /// The whole write transaction has to go: the map must grow first, or LMDB refuses
    /// to go on with it. Other failures (a value LMDB will not store, say) are one
    /// request's, and its nested transaction is rolled back alone.
    public var spoilsTransaction: Bool {
        isMapFull || code == MDB_PANIC || code == MDB_BAD_TXN || code == ENOSPC || code == EIO || code == ENOMEM
    }

    /// What a caller is told (SPEC 5): `storage_full` when the disk or the map is full
    /// (nothing was appended; appends work again once there is space), otherwise
    /// `storage_error`. The message never names the store's path.
    var ledgerError: LedgerError {
        let reason = String(cString: mdb_strerror(code))
        if isMapFull || code == ENOSPC || code == EDQUOT || code == EFBIG {
            return LedgerError(.storageFull, "the store is full (\(reason)); nothing of the request was appended")
        }
        return LedgerError(.storageError, "storage failure in \(operation.split(separator: ":").first ?? ""): \(reason)")
    }

}
