import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres

/// A deterministic, rule-abiding event mix for the benchmark.
///
/// Every user follows one script on its own clock (the rules only order time within
/// a stream): a first device, a second one approved from the first (trusted device),
/// a third one via OTP, then a steady loop of accesses, challenges issued and
/// approved or denied, OTPs issued and verified, push-token updates, and renames that
/// respect the cooling window. Users are interleaved in groups, so every batch
/// touches many streams, as a real service's traffic does.
struct BenchUser {
    let user: String
    private(set) var step = 0
    private var t: Int64

    /// Seconds between the loop's steps: 12 steps of 60 s keep renames 720 s apart
    /// (cooling 300 s) and OTP issues 720 s apart (at most 5 per hour).
    static let loopStep: Int64 = 60
    static let loopLength = 12

    init(_ user: String, start: Timestamp) {
        self.user = user
        self.t = start.milliseconds
    }

    private func at(_ offset: Int64 = 0) -> Timestamp { Timestamp(milliseconds: t + offset * 1000) }

    /// The user's next event.
    mutating func next() -> Event {
        defer { step += 1 }
        var d = EventData()
        var meta: StringMap?
        let type: EventType
        switch step {
        case 0:
            type = .registered
            d[.deviceId] = .string("d1"); d[.name] = .string("Phone of \(user)"); d[.kind] = .string("mobile")
            d[.platform] = .string("ios"); d[.binding] = .string("permanent"); d[.via] = .string("initial")
            d[.pushToken] = .string("apns-\(user)-1")
            meta = StringMap([("actor", "user"), ("ip", "192.0.2.10")])
        case 1:
            t += 10_000; type = .accessed; d[.deviceId] = .string("d1")
        case 2:
            t += 10_000; type = .challengeIssued
            d[.challengeId] = .string("c0"); d[.action] = .string("login"); d[.requestingDeviceId] = .string("d2")
            d[.expiresAt] = .time(at(60))
            d[.context] = .map(StringMap([("ip", "198.51.100.7"), ("location", "Berlin, DE")]))
        case 3:
            t += 10_000; type = .challengeApproved
            d[.challengeId] = .string("c0"); d[.approverDeviceId] = .string("d1"); d[.userVerified] = .bool(true)
            meta = StringMap([("actor", "device:d1")])
        case 4:
            t += 10_000; type = .registered
            d[.deviceId] = .string("d2"); d[.name] = .string("Laptop of \(user)"); d[.kind] = .string("desktop")
            d[.platform] = .string("linux"); d[.binding] = .string("permanent"); d[.via] = .string("trusted_device")
            d[.challengeId] = .string("c0")
        case 5:
            t += 10_000; type = .accessed; d[.deviceId] = .string("d2")
        case 6:
            t += 10_000; type = .otpIssued
            d[.otpId] = .string("o0"); d[.channel] = .string("email"); d[.target] = .string("u***@example.com")
            d[.codeHash] = .string("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
            d[.expiresAt] = .time(at(300)); d[.maxAttempts] = .int(5)
        case 7:
            t += 10_000; type = .otpVerified
            d[.otpId] = .string("o0"); d[.grantId] = .string("g0"); d[.grantExpiresAt] = .time(at(600))
        case 8:
            // Cooling from the trusted-device registration (at t-40 s) is over after 300 s.
            t += 330_000; type = .registered
            d[.deviceId] = .string("d3"); d[.name] = .string("Tablet of \(user)"); d[.kind] = .string("tablet")
            d[.platform] = .string("android"); d[.binding] = .string("temporary"); d[.via] = .string("otp")
            d[.grantId] = .string("g0")
        default:
            let k = step - 9
            let round = k / BenchUser.loopLength
            t += (k == 0 ? 310 : BenchUser.loopStep) * 1000
            switch k % BenchUser.loopLength {
            case 0: type = .accessed; d[.deviceId] = .string("d1")
            case 1: type = .accessed; d[.deviceId] = .string("d2")
            case 2:
                type = .challengeIssued
                d[.challengeId] = .string("t\(round)"); d[.action] = .string("transaction")
                d[.requestingDeviceId] = .string("d3"); d[.expiresAt] = .time(at(120))
                d[.context] = .map(StringMap([("app", "bank"), ("bindingMessage", "Pay 42.00 EUR")]))
            case 3:
                type = .challengeApproved
                d[.challengeId] = .string("t\(round)"); d[.approverDeviceId] = .string("d1")
                meta = StringMap([("actor", "device:d1"), ("requestId", "r-\(round)")])
            case 4: type = .accessed; d[.deviceId] = .string("d3")
            case 5:
                type = .otpIssued
                d[.otpId] = .string("o\(round + 1)"); d[.channel] = .string("sms"); d[.target] = .string("+49***0042")
                d[.codeHash] = .string("2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae")
                d[.expiresAt] = .time(at(300)); d[.maxAttempts] = .int(5)
            case 6:
                type = .otpVerified
                d[.otpId] = .string("o\(round + 1)"); d[.grantId] = .string("g\(round + 1)")
                d[.grantExpiresAt] = .time(at(600))
            case 7:
                type = .renamed
                d[.deviceId] = .string("d\(round % 3 + 1)"); d[.name] = .string("Device \(round) of \(user)")
                meta = StringMap([("actor", "user")])
            case 8:
                type = .challengeIssued
                d[.challengeId] = .string("l\(round)"); d[.action] = .string("login")
                d[.requestingDeviceId] = .string("d2"); d[.expiresAt] = .time(at(120))
            case 9:
                type = .challengeDenied
                d[.challengeId] = .string("l\(round)"); d[.approverDeviceId] = .string("d1")
            case 10: type = .accessed; d[.deviceId] = .string("d1")
            default:
                type = .pushTokenUpdated; d[.deviceId] = .string("d2"); d[.pushToken] = .string("fcm-\(user)-\(round)")
            }
        }
        return Event(type: type, user: user, at: at(), data: d, meta: meta)
    }
}

/// Produces `total` events over `total / perUser` users, interleaving `group` users
/// at a time round-robin.
struct BenchWorkload {
    let total: Int
    let perUser: Int
    let group: Int
    let prefix: String
    let start: Timestamp
    private(set) var produced = 0
    private var active: [BenchUser] = []
    private var cursor = 0
    private var nextUser = 0

    init(total: Int, perUser: Int = 40, group: Int = 1000, prefix: String = "user", start: Timestamp) {
        self.total = total
        self.perUser = max(perUser, 10)
        self.group = group
        self.prefix = prefix
        self.start = start
    }

    var userCount: Int { (total + perUser - 1) / perUser }

    mutating func next() -> Event? {
        guard produced < total else { return nil }
        if active.isEmpty || cursor >= active.count {
            active.removeAll { $0.step >= perUser }
            while active.count < group && nextUser < userCount {
                active.append(BenchUser("\(prefix)-\(nextUser)", start: start))
                nextUser += 1
            }
            cursor = 0
        }
        let e = active[cursor].next()
        cursor += 1
        produced += 1
        return e
    }

    mutating func batch(_ n: Int) -> [EventInput] {
        var out: [EventInput] = []
        out.reserveCapacity(n)
        while out.count < n, let e = next() { out.append(EventInput(event: e)) }
        return out
    }
}
