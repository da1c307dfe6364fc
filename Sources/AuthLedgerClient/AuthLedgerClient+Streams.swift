import AsyncHTTPClient
import AuthLedgerCore
import NIOCore
import OpenAPIRuntime

/// A durable subscription's filter and checkpoint (`/v1/subscriptions/{name}`).
public struct Subscription: Sendable, Equatable {
    /// Its name.
    public var name: String
    /// Only this user's events (nil: everyone's).
    public var user: String?
    /// Only these types (empty: every type).
    public var types: [EventType]
    /// The last `seq` its consumer acknowledged.
    public var checkpoint: UInt64

    init(json: JSON) throws(AuthLedgerClientError) {
        guard let name = json["name"]?.stringValue, let cp = json["checkpoint"]?.intValue, cp >= 0 else {
            throw .invalidAnswer("a subscription is not {name, checkpoint}")
        }
        self.name = name
        user = json["user"]?.stringValue
        types = (json["types"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(EventType.init(name:)) }
        checkpoint = UInt64(cp)
    }
}

extension AuthLedgerClient {
    // MARK: - The event feed

    /// The event feed (`GET /v1/events`): the recorded events from `from` (inclusive; nil: live
    /// from the head), then live, optionally one user's or some types only. It reconnects by
    /// itself after a broken connection or a server restart, resuming with `Last-Event-ID`:
    /// no event is missed or delivered twice. It ends only when the task iterating it is
    /// cancelled, or with an error for a refusal (a position beyond the head: the server
    /// serves another store).
    public func events(from: UInt64? = nil, user: String? = nil, types: [EventType] = []) -> AsyncThrowingStream<RecordedEvent, any Error> {
        let query: [(String, String?)] = [("from", from.map(String.init)), ("user", user),
                                          ("types", types.isEmpty ? nil : types.map(\.name).joined(separator: ","))]
        return recordedEvents(path: "/v1/events", query: query, resumeAfter: nil)
    }

    // MARK: - Durable subscriptions

    /// Creates the named subscription, or replaces its filter (its checkpoint stays unless `from` is given).
    @discardableResult
    public func subscribe(_ name: String, user: String? = nil, types: [EventType] = [], from: UInt64? = nil) async throws(AuthLedgerClientError) -> Subscription {
        var m: [(String, JSON)] = []
        Self.add(&m, "user", user)
        if !types.isEmpty { m.append(("types", .array(types.map { .string($0.name) }))) }
        if let from { m.append(("from", .int(Int64(from)))) }
        return try Subscription(json: try await send(.PUT, "/v1/subscriptions/" + Self.escaped(name), body: .object(m)).json())
    }

    /// The named subscription's filter and checkpoint.
    public func subscription(_ name: String) async throws(AuthLedgerClientError) -> Subscription {
        try Subscription(json: try await send(.GET, "/v1/subscriptions/" + Self.escaped(name)).json())
    }

    /// Deletes the named subscription.
    public func unsubscribe(_ name: String) async throws(AuthLedgerClientError) {
        _ = try await send(.DELETE, "/v1/subscriptions/" + Self.escaped(name))
    }

    /// The subscription's events from its checkpoint + 1, then live; reconnects by itself with
    /// `Last-Event-ID` (no gap, no duplicate while it runs). Delivery across restarts of the
    /// consumer is at least once: acknowledge what was handled with ``acknowledge(_:through:)``.
    public func subscriptionEvents(_ name: String) -> AsyncThrowingStream<RecordedEvent, any Error> {
        recordedEvents(path: "/v1/subscriptions/" + Self.escaped(name) + "/events", query: [], resumeAfter: nil)
    }

    /// Moves the subscription's checkpoint to `seq` (it only moves forward).
    @discardableResult
    public func acknowledge(_ name: String, through seq: UInt64) async throws(AuthLedgerClientError) -> Subscription {
        try Subscription(json: try await send(.POST, "/v1/subscriptions/" + Self.escaped(name) + "/ack", body: .object([("seq", .int(Int64(seq)))])).json())
    }

    /// Recorded events of an event stream: each `seq` once, in order, across reconnections.
    func recordedEvents(path: String, query: [(String, String?)], resumeAfter: UInt64?) -> AsyncThrowingStream<RecordedEvent, any Error> {
        resumingStream(path: path, query: query, lastEventID: resumeAfter.map(String.init), state: resumeAfter) { event, last in
            guard let data = event.data, !data.isEmpty else { return [] }
            let json: JSON
            do { json = try JSON.parse(data) } catch { throw AuthLedgerClientError.invalidAnswer("a feed event is not JSON") }
            let e = try Self.decode(json, RecordedEvent.init(json:))
            // A reconnection resumes after the last seq delivered: anything at or before it is a repeat.
            if let l = last, e.seq <= l { return [] }
            last = e.seq
            return [e]
        }
    }

    // MARK: - Server-Sent Events that resume

    /// An SSE stream that reconnects with `Last-Event-ID` (the last `id:` received) after a
    /// broken connection, a server restart, a stall cut-off or a 429/503, pausing
    /// ``reconnectDelay`` (doubling up to ``maxReconnectDelay``) between attempts. Any other
    /// refusal ends the stream with it. `handle` turns each event into elements; it runs on
    /// the stream's one task, with the stream's `state` (what it delivered so far).
    func resumingStream<Element: Sendable, State: Sendable>(
        path: String, query: [(String, String?)], lastEventID: String?, state initial: State,
        handle: @escaping @Sendable (ServerSentEvent, inout State) throws -> [Element]
    ) -> AsyncThrowingStream<Element, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Element, any Error>.makeStream()
        let client = self
        let task = Task {
            var lastID = lastEventID
            var state = initial
            var delay = client.reconnectDelay
            while !Task.isCancelled {
                do {
                    var headers: [(String, String)] = [("Accept", "text/event-stream")]
                    if let lastID { headers.append(("Last-Event-ID", lastID)) }
                    let req = client.request(.GET, client.url(path, query), headers: headers)
                    let response = try await client.httpClient.execute(req, deadline: .distantFuture)
                    let status = Int(response.status.code)
                    if status >= 400 {
                        var buffer = try await response.body.collect(upTo: 1 << 20)
                        let refusal = Self.refusal(Answer(status: status, headers: response.headers, body: buffer.readBytes(length: buffer.readableBytes) ?? []))
                        guard status == 429 || status == 503 else { throw refusal }
                    } else {
                        let chunks = response.body.map { ArraySlice($0.readableBytesView) }
                        for try await event in chunks.asDecodedServerSentEvents() {
                            if let id = event.id, !id.isEmpty { lastID = id }
                            for element in try handle(event, &state) { continuation.yield(element) }
                            delay = client.reconnectDelay
                        }
                    }
                } catch let e as AuthLedgerClientError {
                    if case .refused = e { continuation.finish(throwing: e); return }
                    if case .invalidAnswer = e { continuation.finish(throwing: e); return }
                } catch {
                    if Task.isCancelled { break }
                    // A broken connection or a server that went away: try again below.
                }
                do { try await Task.sleep(for: delay) } catch { break }
                delay = min(delay * 2, client.maxReconnectDelay)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
