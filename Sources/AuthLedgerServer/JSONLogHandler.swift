import AuthLedger
import Foundation
import Logging
import Synchronization

/// A swift-log handler writing one JSON object per line (`serve --log-format json`):
/// `time` (RFC 3339, milliseconds, UTC), `level`, `message`, `label`, then the entry's
/// metadata as members of their own — for requests `requestId`, `method`, `route`,
/// `status`, `durationMs`, `caller`. Numbers stay numbers; a metadata key that would
/// replace one of the fixed members is kept under `metadata` instead. Hummingbird's
/// `hb.request.id` is written as `requestId`.
public struct JSONLogHandler: LogHandler {
    /// Where the lines go (one `write` per line, so lines of several threads never mix).
    public typealias Sink = @Sendable ([UInt8]) -> Void

    /// The logger's label.
    public let label: String
    /// Entries below this level are dropped.
    public var logLevel: Logger.Level = .info
    /// The metadata every entry of this logger carries.
    public var metadata: Logger.Metadata = [:]
    /// Adds metadata to every entry (swift-log's task-local providers).
    public var metadataProvider: Logger.MetadataProvider?
    private let sink: Sink

    /// A handler for `label` writing to `sink`.
    public init(label: String, sink: @escaping Sink) {
        self.label = label
        self.sink = sink
    }

    /// A handler for `label` writing to standard error.
    public static func standardError(label: String) -> JSONLogHandler {
        JSONLogHandler(label: label) { line in
            line.withUnsafeBytes { b in _ = Foundation.write(2, b.baseAddress, b.count) }
        }
    }

    /// The metadata value of `key` of this logger.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes the entry as one line.
    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, p in p } }
        if let given = event.metadata { merged.merge(given) { _, g in g } }
        sink(Array((Self.line(time: .now(), level: event.level, label: label, message: "\(event.message)", metadata: merged) + "\n").utf8))
    }

    static let fixed: Set<String> = ["time", "level", "message", "label"]

    /// The JSON object of one entry.
    static func line(time: Timestamp, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var members: [(String, JSON)] = [("time", .string(time.formatted)), ("level", .string(level.rawValue)),
                                         ("message", .string(message)), ("label", .string(label))]
        var clashing: [(String, JSON)] = []
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            // Hummingbird's request id, unless the entry names it itself (the request line does).
            if key == "hb.request.id" && metadata["requestId"] != nil { continue }
            let name = key == "hb.request.id" ? "requestId" : key
            if fixed.contains(name) { clashing.append((name, json(value))) } else { members.append((name, json(value))) }
        }
        if !clashing.isEmpty { members.append(("metadata", .object(clashing))) }
        return JSON.object(members).serialized()
    }

    static func json(_ value: Logger.Metadata.Value) -> JSON {
        switch value {
        case .string(let s): return .string(s)
        case .stringConvertible(let c):
            if let i = c as? any BinaryInteger, let v = Int64(exactly: i) { return .int(v) }
            if let d = c as? Double, d.isFinite { return .number(String(format: "%.3f", d)) }
            if let b = c as? Bool { return .bool(b) }
            return .string(c.description)
        case .array(let a): return .array(a.map(json))
        case .dictionary(let d): return .object(d.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) })
        }
    }
}
