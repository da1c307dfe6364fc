/// A point in time with millisecond precision, as every time in the ledger is stored.
///
/// Parsing accepts RFC 3339 with a zone (`Z` or `±HH:MM`) and any number of
/// fractional digits; digits below the millisecond are truncated. Formatting is
/// always `YYYY-MM-DDTHH:MM:SS.sssZ`.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var milliseconds: Int64

    /// The time `milliseconds` after 1970-01-01T00:00:00Z (negative: before).
    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    /// Earlier than.
    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    /// This time moved by `seconds`, saturating at `.max` and `.min`: a derived time
    /// (a cooling `until`, an expiry) past 9999-12-31T23:59:59.999Z is that time, never
    /// one that cannot be written or stored.
    public func adding(seconds: Int64) -> Timestamp {
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds > 0 ? .max : .min }
        let (sum, over) = milliseconds.addingReportingOverflow(ms)
        if over { return ms > 0 ? .max : .min }
        return Timestamp(milliseconds: Swift.min(Swift.max(sum, Timestamp.min.milliseconds), Timestamp.max.milliseconds))
    }

    /// 1970-01-01T00:00:00.000Z: event times are not earlier (SPEC 2.1).
    public static let epoch = Timestamp(milliseconds: 0)

    /// Whether an event or a caller may use this time: 1970-01-01T00:00:00Z through
    /// 9999-12-31T23:59:59.999Z.
    public var isWithinEventRange: Bool { self >= .epoch && self <= .max }

    /// Parses an RFC 3339 time a caller sends (an event's times, `asOf`, `--now`):
    /// nil unless it is well-formed and within 1970…9999.
    public init?(callerTime text: String) {
        guard let t = Timestamp(rfc3339: text), t.isWithinEventRange else { return nil }
        self = t
    }

    /// 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the range RFC 3339 can write.
    public static let min = Timestamp(milliseconds: -62_167_219_200_000)
    /// 9999-12-31T23:59:59.999Z: the latest time the ledger writes.
    public static let max = Timestamp(milliseconds: 253_402_300_799_999)

    /// The system clock, truncated to milliseconds. Only the edges (CLI, server) call it.
    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    /// The normalised form, as ``Timestamp/formatted``.
    public var description: String { formatted }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ` (written by `writeFormatted`, the one formatter).
    public var formatted: String {
        var out = [UInt8]()
        out.reserveCapacity(24)
        writeFormatted(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses RFC 3339 (`2026-03-01T09:00:00Z`, `2026-03-01T10:00:00.123456+01:00`).
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for k in 0..<n {
                let c = b[i + k]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8, _ alt: UInt8? = nil) -> Bool {
            guard i < b.count, b[i] == c || b[i] == alt else { return false }
            i += 1
            return true
        }
        guard let y = digits(4), expect(45), let mo = digits(2), expect(45), let d = digits(2),
              expect(84, 116), let h = digits(2), expect(58), let mi = digits(2), expect(58), let s = digits(2)
        else { return nil }
        guard (1...12).contains(mo), d >= 1, d <= Timestamp.daysIn(month: mo, year: y),
              h <= 23, mi <= 59, s <= 59 else { return nil }
        var frac: Int64 = 0
        if i < b.count && b[i] == 46 {
            i += 1
            var n = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if n < 3 { frac = frac * 10 + Int64(b[i] - 48) }
                n += 1; i += 1
            }
            guard n > 0 else { return nil }
            var k = n
            while k < 3 { frac *= 10; k += 1 }
        }
        var offset: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            let sign: Int64 = b[i] == 45 ? -1 : 1
            i += 1
            guard let oh = digits(2), expect(58), let om = digits(2), oh <= 23, om <= 59 else { return nil }
            offset = sign * (oh * 60 + om) * 60_000
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Timestamp.days(fromCivil: y, mo, d)
        let ms = days * 86_400_000 + h * 3_600_000 + mi * 60_000 + s * 1000 + frac - offset
        guard ms >= Timestamp.min.milliseconds, ms <= Timestamp.max.milliseconds else { return nil }
        self.milliseconds = ms
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
