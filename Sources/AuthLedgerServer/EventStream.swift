import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import NIOCore
import ServiceLifecycle

extension LedgerServer {
    /// Streams `feed` as Server-Sent Events: `id:` = seq, `event:` = type, `data:` =
    /// the recorded event. Catch-up then live (the feed reads the log a page at a time);
    /// heartbeat comments while idle.
    func eventStream(_ feed: LedgerEventFeed, context: ServerRequestContext, slot: SubscriberSlot?) -> Response {
        serverSentEvents(context: context, slot: slot, label: "from \(feed.start)") { FeedFrames(iterator: feed.makeAsyncIterator()) }
    }

    /// Streams what `makeSource` makes as Server-Sent Events: its frames as they come,
    /// its idle frame (a heartbeat) while nothing came for `heartbeatInterval`.
    ///
    /// Back-pressure, not buffering: each write waits for the connection to take it, so
    /// a slow subscriber holds one batch of frames and NIO's bounded outbound buffer,
    /// and never delays writers or other subscribers. One whose connection accepts
    /// nothing for `stallTimeout` is cut off (the connection closed); it resumes with
    /// `Last-Event-ID`.
    ///
    /// `slot` (the caller's place under `maxSubscribersPerToken`) is held until the
    /// stream ends.
    func serverSentEvents<Source: SSESource>(context: ServerRequestContext, slot: SubscriberSlot?, label: String,
                                             _ makeSource: @escaping @Sendable () -> Source) -> Response {
        let headers: HTTPFields = [
            .contentType: "text/event-stream",
            .cacheControl: "no-cache",
            HTTPField.Name("X-Accel-Buffering")!: "no",
        ]
        let channel = context.channel
        let logger = context.logger
        return Response(status: .ok, headers: headers, body: .init { [metrics, configuration] writer in
            defer { slot?.release() }
            metrics.subscriberConnected()
            defer { metrics.subscriberDisconnected() }
            logger.debug("subscriber connected", metadata: ["stream": "\(label)"])
            let watch = StallWatch()
            let watchdog = Task {
                let interval = min(configuration.stallTimeout / 4, .seconds(1))
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    if watch.stalled(longerThan: configuration.stallTimeout) {
                        metrics.subscriberCutOff()
                        logger.notice("subscriber cut off: its connection took nothing for too long")
                        channel.close(mode: .all, promise: nil)
                        return
                    }
                }
            }
            defer { watchdog.cancel() }
            let shutdown = OnceFlag()
            var source = makeSource()
            let clock = ContinuousClock()
            let tick = min(configuration.heartbeatInterval, .seconds(1))
            do {
                try await withGracefulShutdownHandler {
                    var lastWrite = clock.now
                    try await watch.write(&writer, ByteBuffer(string: "retry: 1000\n: connected\n\n"))
                    while !shutdown.isSet {
                        if let frames = try await source.next(idle: tick) {
                            try await watch.write(&writer, frames)
                            lastWrite = clock.now
                        } else if lastWrite.duration(to: clock.now) >= configuration.heartbeatInterval {
                            try await watch.write(&writer, source.idleFrame())
                            lastWrite = clock.now
                        }
                    }
                } onGracefulShutdown: {
                    shutdown.set()
                }
                try await writer.finish(nil)
            } catch is CancellationError {
                // The server is going away.
            } catch {
                // The subscriber went away (or was cut off): nothing to answer.
                logger.debug("subscriber disconnected", metadata: ["error": "\(error)"])
            }
        })
    }

    /// The frame of a live event is built once per process (by the feed hub) and shared.
    static func frame(_ e: FeedEntry, into buffer: inout ByteBuffer) {
        buffer.writeString(e.frame ?? FeedEntry.sseFrame(e.event))
    }
}

/// What a Server-Sent Events stream sends: batches of frames, and a frame for idle times.
protocol SSESource: SendableMetatype {
    /// The next frames (one write), or nil when none came within `idle`.
    mutating func next(idle: Duration) async throws -> ByteBuffer?
    /// What goes out when nothing did for the heartbeat interval.
    func idleFrame() -> ByteBuffer
}

/// The event feed's frames: `id:` = seq, `event:` = type, `data:` = the recorded event.
struct FeedFrames: SSESource {
    var iterator: LedgerEventFeed.Iterator

    mutating func next(idle: Duration) async throws -> ByteBuffer? {
        guard let first = try await iterator.nextEntry(idle: idle) else { return nil }
        // Frames already read from the log go out in one write.
        var buffer = ByteBuffer()
        LedgerServer.frame(first, into: &buffer)
        while iterator.buffered > 0, buffer.readableBytes < 64 * 1024, let e = try await iterator.nextEntry(idle: .zero) {
            LedgerServer.frame(e, into: &buffer)
        }
        return buffer
    }

    func idleFrame() -> ByteBuffer { ByteBuffer(string: ": heartbeat\n\n") }
}

/// When the current write to a subscriber began (nil: none pending).
final class StallWatch: Sendable {
    private let pendingSince = Mutex<ContinuousClock.Instant?>(nil)

    func write(_ writer: inout any ResponseBodyWriter, _ buffer: ByteBuffer) async throws {
        pendingSince.withLock { $0 = ContinuousClock().now }
        defer { pendingSince.withLock { $0 = nil } }
        try await writer.write(buffer)
    }

    func stalled(longerThan limit: Duration) -> Bool {
        pendingSince.withLock { $0.map { $0.duration(to: ContinuousClock().now) > limit } ?? false }
    }
}
