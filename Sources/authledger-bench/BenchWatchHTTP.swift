import AuthLedger
import Foundation
import Synchronization

/// The `watch_http` phase: watches over HTTP (`GET /v1/watch`, several keys a connection)
/// against a `LedgerServer` in this process. Opens `connections` connections of one key,
/// then `connections` more of `keysPerConnection` keys, so the memory of a watch beyond
/// its connection is the difference of the two steps; then commit-to-watcher latency at
/// `commitsPerSecond` with every watch open, read from the sockets.
///
/// The client is one thread polling every socket (`poll(2)`): the bench executable has
/// no HTTP client library, and 2,000 streams on one thread keep the client's cost small
/// beside the server's.
struct BenchWatchHTTP {
    let dir: String
    var connections = 1_000
    var keysPerConnection = 9
    var commitsPerSecond = 1_000
    var seconds = 5.0

    func run() async throws -> [(String, Double)] {
        try BenchWatchHTTP.raiseFileLimit(to: 4 * connections + 256)
        let ledger = try await Ledger(lmdb: dir)
        defer { Task { await ledger.close() } }
        let users = (0..<(connections * (1 + keysPerConnection))).map { "w\($0)" }
        try await BenchWatch(dir: dir).seed(ledger, users)
        let token = "bench-watch-token"
        let server = try await BenchServer.start(ledger, tokens: "bench-watch=\(token):read,bench-admin:admin") { config in
            config.maxSubscribersPerToken = nil
        }
        defer { server.cancel() }
        let reader = SSEReader(users: users.count)
        let thread = Thread { reader.loop() }
        thread.start()
        defer { reader.stop() }

        // Step 1: one key a connection. Step 2: keysPerConnection keys a connection.
        let m0 = BenchRun.memory().anon
        let t0 = ContinuousClock.now
        for c in 0..<connections {
            try reader.add(SSEReader.open(port: server.port, token: token, path: "/v1/watch?devices=\(users[c])"))
        }
        try await reader.waitForSnapshots(connections)
        let m1 = BenchRun.memory().anon
        for c in 0..<connections {
            let first = connections + c * keysPerConnection
            let keys = users[first..<(first + keysPerConnection)].joined(separator: ",")
            try reader.add(SSEReader.open(port: server.port, token: token, path: "/v1/watch?devices=\(keys)"))
        }
        try await reader.waitForSnapshots(users.count)
        let opened = t0.duration(to: .now)
        let m2 = BenchRun.memory().anon
        let perConnection = (m1 - m0) * 1024 * 1024 / Double(connections)
        let secondStep = (m2 - m1) * 1024 * 1024
        let perWatchBeyond = (secondStep - perConnection * Double(connections)) / Double(connections * (keysPerConnection - 1))

        // Commit-to-watcher latency with every watch open: one access a commit, a random user.
        try await Task.sleep(for: .milliseconds(200))
        let (commits, rate) = try await BenchWatch.accesses(ledger, users, perSecond: commitsPerSecond, seconds: seconds, into: reader.record)
        try await Task.sleep(for: .seconds(1))
        let lags = reader.record.lags.withLock { $0 }.sorted()
        let refused = reader.refused.load(ordering: .relaxed)
        reader.stop()
        await server.stop()
        guard refused == 0 else { throw LedgerError(.storageError, "\(refused) watch connections were not answered 200") }
        return [("connections", Double(2 * connections)), ("watches", Double(users.count)),
                ("watches_opened_per_s", Double(users.count) / opened.seconds),
                ("bytes_per_connection_with_one_watch", perConnection),
                ("bytes_per_watch_beyond_connection", perWatchBeyond),
                ("commit_to_watcher_p50_ms", BenchRun.percentile(lags, 0.5)),
                ("commit_to_watcher_p99_ms", BenchRun.percentile(lags, 0.99)),
                ("commit_to_watcher_delivered", Double(lags.count)), ("commits", Double(commits)),
                ("commits_per_s_achieved", rate)]
    }

    /// Raises the soft limit of open files to `n` (at most the hard limit): each connection
    /// is two descriptors in this process, the client's and the server's.
    static func raiseFileLimit(to n: Int) throws {
        var l = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &l) == 0 else { return }
        guard l.rlim_cur < rlim_t(n) else { return }
        guard l.rlim_max >= rlim_t(n) else {
            throw LedgerError(.storageError, "watch_http needs \(n) open files; the hard limit is \(l.rlim_max) (ulimit -Hn)")
        }
        l.rlim_cur = rlim_t(n)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &l)
    }
}

/// Server-Sent Event streams read by one polling thread: counts the snapshots and, for
/// each `changed` frame, the time since the last commit to its user (`record`).
final class SSEReader: Sendable {
    /// When the last commit to each user (`w<index>`) was requested, and the commit-to-watcher times.
    let record: LatencyRecord
    let snapshots = Atomic<Int>(0)
    /// Connections whose answer was not 200 or that closed.
    let refused = Atomic<Int>(0)
    private let added = Mutex<[Int32]>([])
    private let stopped = Atomic<Bool>(false)

    init(users: Int) { record = LatencyRecord(users) }

    /// A connection to `port` with the request for `path` sent (non-blocking after that).
    static func open(port: Int, token: String, path: String) throws -> Int32 {
        let fd = try LoopbackClient.connect(port: port)
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nAccept: text/event-stream\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { close(fd); throw LedgerError(.storageError, "send failed") }
            sent += n
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    func add(_ fd: Int32) { added.withLock { $0.append(fd) } }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Until `n` snapshots came (at most 120 s).
    func waitForSnapshots(_ n: Int) async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(120))
        while snapshots.load(ordering: .relaxed) < n {
            guard ContinuousClock.now < deadline, refused.load(ordering: .relaxed) == 0 else {
                throw LedgerError(.storageError, "watch_http: \(snapshots.load(ordering: .relaxed)) of \(n) snapshots, \(refused.load(ordering: .relaxed)) connections refused")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The thread's loop: polls every connection, splits what comes into frames (the
    /// chunked encoding's size lines fall between frames and are skipped as lines of
    /// no field), and closes every connection when stopped.
    func loop() {
        var fds: [pollfd] = []
        var carry: [[UInt8]] = []
        var answered: [Bool] = []
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while !stopped.load(ordering: .relaxed) {
            for fd in added.withLock({ a in defer { a.removeAll() }; return a }) {
                fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
                carry.append([])
                answered.append(false)
            }
            guard poll(&fds, nfds_t(fds.count), 10) > 0 else { continue }
            for i in fds.indices where fds[i].revents != 0 && fds[i].fd >= 0 {
                let n = buffer.withUnsafeMutableBytes { recv(fds[i].fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else {
                    if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                        refused.add(1, ordering: .relaxed)
                        close(fds[i].fd)
                        fds[i].fd = -1
                    }
                    continue
                }
                var bytes = carry[i]
                bytes += buffer[0..<n]
                if !answered[i], bytes.count >= 12 {
                    answered[i] = true
                    if !bytes.starts(with: Array("HTTP/1.1 200".utf8)) { refused.add(1, ordering: .relaxed) }
                }
                carry[i] = frames(bytes)
            }
        }
        for p in fds where p.fd >= 0 { close(p.fd) }
    }

    /// Takes every whole frame of `bytes`; returns the rest (an unfinished frame).
    private func frames(_ bytes: [UInt8]) -> [UInt8] {
        var lineStart = 0
        var event: ArraySlice<UInt8> = []
        var user: Int?
        var consumed = 0
        for k in bytes.indices where bytes[k] == 10 {
            let line = bytes[lineStart..<k]
            lineStart = k + 1
            if line.isEmpty {
                // A frame ends.
                if event.elementsEqual("snapshot".utf8) {
                    snapshots.add(1, ordering: .relaxed)
                } else if event.elementsEqual("changed".utf8), let u = user {
                    let now = ContinuousClock.now
                    if let t = record.sent.withLock({ $0[u] }) { record.lags.withLock { $0.append(t.duration(to: now).milliseconds) } }
                }
                event = []
                user = nil
                consumed = lineStart
            } else if line.starts(with: "event: ".utf8) {
                event = line.dropFirst(7)
            } else if line.starts(with: "data: ".utf8) {
                user = SSEReader.userIndex(line)
            }
        }
        return Array(bytes[consumed...])
    }

    /// The index of `"user":"w<index>"` in a data line.
    private static func userIndex(_ line: ArraySlice<UInt8>) -> Int? {
        let key = Array(#""user":"w"#.utf8)
        guard let r = line.firstRange(of: key) else { return nil }
        var v = 0, any = false
        for b in line[r.upperBound...] {
            guard b >= 48 && b <= 57 else { break }
            v = v * 10 + Int(b - 48)
            any = true
        }
        return any ? v : nil
    }
}
