import AuthLedgerCore
import Foundation

extension AppendSession {
    /// Runs `body` so that a refusal undoes only its own writes and cached state.
    func isolated<T>(_ body: () throws -> T) throws -> T {
        try beginRequest()
        do {
            let value = try w.savepoint(body)
            endRequest(committed: true)
            return value
        } catch {
            endRequest(committed: false)
            throw error
        }
    }
}
