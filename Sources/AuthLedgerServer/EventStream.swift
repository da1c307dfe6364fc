import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization
import NIOCore
import ServiceLifecycle

extension LedgerServer {
    /// Streams `feed` as Server-Sent Events: `id:` = seq, `event:` = type, `data:` =
    /// the recorded event. Catch-up then live; heartbeat comments while idle.
    ///
    /// Back-pressure, not buffering: the feed reads the log a page at a time and each
    /// write waits for the connection to take it, so a slow subscriber holds one page
    /// and NIO's bounded outbound buffer, and never delays writers or other
    /// subscribers. One whose connection accepts nothing for `stallTimeout` is cut off
    /// (the connection closed); it resumes with `Last-Event-ID`.
    ///
    /// `slot` (the caller's place under `maxSubscribersPerToken`) is held until the
    /// stream ends.
    func eventStream(_ feed: LedgerEventFeed, context: ServerRequestContext, slot: SubscriberSlot?) -> Response {
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
            logger.debug("subscriber connected", metadata: ["from": "\(feed.start)"])
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
            var iterator = feed.makeAsyncIterator()
            let clock = ContinuousClock()
            let tick = min(configuration.heartbeatInterval, .seconds(1))
            do {
                try await withGracefulShutdownHandler {
                    var lastWrite = clock.now
                    try await watch.write(&writer, ByteBuffer(string: "retry: 1000\n: connected\n\n"))
                    while !shutdown.isSet {
                        guard let first = try await iterator.nextEntry(idle: tick) else {
                            if lastWrite.duration(to: clock.now) >= configuration.heartbeatInterval {
                                try await watch.write(&writer, ByteBuffer(string: ": heartbeat\n\n"))
                                lastWrite = clock.now
                            }
                            continue
                        }
                        // Frames already read from the log go out in one write.
                        var buffer = ByteBuffer()
                        Self.frame(first, into: &buffer)
                        while iterator.buffered > 0, buffer.readableBytes < 64 * 1024, let e = try await iterator.nextEntry(idle: .zero) {
                            Self.frame(e, into: &buffer)
                        }
                        try await watch.write(&writer, buffer)
                        lastWrite = clock.now
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
