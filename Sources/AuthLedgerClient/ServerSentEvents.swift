import AsyncHTTPClient
import AuthLedgerCore
import Foundation
import NIOCore

/// One Server-Sent Event: `id:`, `event:`, `data:` (lines joined with `\n`).
public struct ServerSentEvent: Sendable, Equatable {
    /// The event's id (a position of the log), if it has one.
    public var id: UInt64?
    /// Its type (`event:`; `message` when absent).
    public var event: String
    /// Its data.
    public var data: String

    /// The data parsed as JSON (nil when it is not).
    public var json: JSON? { try? JSON.parse(data) }
}

/// A stream of Server-Sent Events from the server that reconnects by itself after a
/// break (a second later, then backing off to 10 s), sending the last id it received as
/// `Last-Event-ID`: the feed resumes with no gap and no duplicate, a watch without a
/// repeated snapshot. A refusal (4xx) ends it with an ``AuthLedgerClientError``. Comments
/// (`: heartbeat`) are skipped. Cancel the iterating task to stop.
public struct ServerSentEvents: AsyncSequence, Sendable {
    /// The stream delivers events.
    public typealias Element = ServerSentEvent

    let client: AuthLedgerClient
    let path: String
    let lastEventID: UInt64?

    /// An iterator that connects on its first `next()`.
    public func makeAsyncIterator() -> Iterator { Iterator(stream: self, last: lastEventID) }

    /// Reads one connection at a time; reconnects when it ends.
    public struct Iterator: AsyncIteratorProtocol {
        let stream: ServerSentEvents
        /// The last id received (sent as `Last-Event-ID` on reconnection).
        public private(set) var last: UInt64?
        var body: HTTPClientResponse.Body.AsyncIterator?
        var pending = ""
        var backoff = 1.0
        /// Connections made so far (the first included).
        public private(set) var connections = 0

        init(stream: ServerSentEvents, last: UInt64?) {
            self.stream = stream
            self.last = last
        }

        /// The next event; reconnects as long as it takes. Throws `CancellationError` when
        /// the task is cancelled, ``AuthLedgerClientError`` when the server refuses.
        public mutating func next() async throws -> ServerSentEvent? {
            while true {
                try Task.checkCancellation()
                if let e = takeEvent() { return e }
                if body == nil {
                    do {
                        try await connect()
                    } catch let e as AuthLedgerClientError where e.status < 500 {
                        throw e
                    } catch {
                        try await pause()
                        continue
                    }
                }
                do {
                    guard let chunk = try await body?.next() else {
                        body = nil
                        try await pause()
                        continue
                    }
                    pending += String(buffer: chunk)
                    backoff = 1.0
                } catch {
                    body = nil
                    pending = ""
                    try Task.checkCancellation()
                    try await pause()
                }
            }
        }

        private mutating func connect() async throws {
            let headers = last.map { [("Last-Event-ID", String($0)), ("Accept", "text/event-stream")] } ?? [("Accept", "text/event-stream")]
            let response = try await stream.client.http.execute(stream.client.request(.GET, stream.path, headers: headers), timeout: .hours(24))
            connections += 1
            guard response.status.code == 200 else {
                let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
                throw AuthLedgerClientError(status: Int(response.status.code), body: text)
            }
            body = response.body.makeAsyncIterator()
            pending = ""
        }

        private mutating func pause() async throws {
            try await Task.sleep(for: .seconds(backoff))
            backoff = Swift.min(backoff * 2, 10)
        }

        /// The next complete event in what was read (blocks without data are skipped).
        private mutating func takeEvent() -> ServerSentEvent? {
            while true {
                pending = pending.replacingOccurrences(of: "\r\n", with: "\n")
                guard let end = pending.range(of: "\n\n") else { return nil }
                let block = pending[..<end.lowerBound]
                pending = String(pending[end.upperBound...])
                var id: UInt64?, event = "message", data: [Substring] = [], hasData = false
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) where !line.hasPrefix(":") {
                    let colon = line.firstIndex(of: ":") ?? line.endIndex
                    let field = line[..<colon]
                    var value = colon < line.endIndex ? line[line.index(after: colon)...] : ""
                    if value.hasPrefix(" ") { value = value.dropFirst() }
                    switch field {
                    case "id": id = UInt64(value)
                    case "event": event = String(value)
                    case "data": data.append(value); hasData = true
                    default: break
                    }
                }
                if let id { last = id }
                if hasData { return ServerSentEvent(id: id, event: event, data: data.joined(separator: "\n")) }
            }
        }
    }
}

/// One update of a watch over HTTP: which answer, its position, the answer (the plain
/// query's JSON), and whether it is the key's `snapshot` or a `changed` answer.
public struct ClientWatchUpdate: Sendable {
    /// `devices`, `cooling`, `pending` or `challenge`.
    public var projection: String
    /// Whose answer.
    public var user: String
    /// The challenge's id (`challenge` only).
    public var challengeId: String?
    /// The position the answer reflects.
    public var position: UInt64
    /// `snapshot` or `changed`.
    public var kind: String
    /// The answer.
    public var answer: JSON
}

/// Watches over HTTP as an `AsyncSequence` of ``ClientWatchUpdate``s (progress notes are
/// taken in, not delivered: they only move the position a reconnection resumes from).
public struct ClientWatch: AsyncSequence, Sendable {
    /// The watch delivers updates.
    public typealias Element = ClientWatchUpdate
    let events: ServerSentEvents

    /// An iterator over the underlying reconnecting stream.
    public func makeAsyncIterator() -> Iterator { Iterator(events: events.makeAsyncIterator()) }

    /// Skips progress notes; decodes the wrapped answers.
    public struct Iterator: AsyncIteratorProtocol {
        /// The stream underneath (its last id is the position a reconnection resumes after).
        public var events: ServerSentEvents.Iterator

        /// The next snapshot or change.
        public mutating func next() async throws -> ClientWatchUpdate? {
            while let e = try await events.next() {
                guard e.event == "snapshot" || e.event == "changed", let j = e.json, let id = e.id,
                      let projection = j["projection"]?.stringValue, let user = j["user"]?.stringValue, let answer = j["answer"] else { continue }
                return ClientWatchUpdate(projection: projection, user: user, challengeId: j["challengeId"]?.stringValue,
                                         position: id, kind: e.event, answer: answer)
            }
            return nil
        }
    }
}
