import Synchronization

/// A flag any thread may set once and read (the server's event streams, the Shared
/// Signals transmitter).
package final class OnceFlag: Sendable {
    private let value = Atomic<Bool>(false)
    package init() {}
    package var isSet: Bool { value.load(ordering: .acquiring) }
    package func set() { value.store(true, ordering: .releasing) }
}
