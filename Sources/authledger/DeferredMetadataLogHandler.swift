import Logging

/// A log handler that keeps its metadata as given and hands it to `inner` only with a
/// message. swift-log's `StreamLogHandler` renders its metadata to text whenever an entry
/// is set, and Hummingbird sets one (`hb.request.id`) on every request: 2% of the server's
/// CPU under load, for entries that are logged only at `debug`.
struct DeferredMetadataLogHandler<Inner: LogHandler>: LogHandler {
    var inner: Inner
    var metadata: Logger.Metadata = [:]

    init(_ inner: Inner) { self.inner = inner }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        guard !metadata.isEmpty else { return inner.log(event: event) }
        var event = event
        event.metadata = event.metadata.map { metadata.merging($0) { _, given in given } } ?? metadata
        inner.log(event: event)
    }
}
