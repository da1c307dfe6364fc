import AuthLedger
import Testing

/// RFC 3339 parsing and the normalised `YYYY-MM-DDTHH:MM:SS.sssZ` form (SPEC 1.1, 1.2).
@Suite struct TimestampTests {
    func norm(_ s: String) -> String? { Timestamp(rfc3339: s)?.formatted }

    @Test(arguments: [
        ("2026-03-01T09:00:00Z", "2026-03-01T09:00:00.000Z"),
        ("2026-03-01t09:00:00z", "2026-03-01T09:00:00.000Z"),
        ("2026-03-01T10:00:00+01:00", "2026-03-01T09:00:00.000Z"),
        ("2026-03-01T03:30:00-05:30", "2026-03-01T09:00:00.000Z"),
        ("2026-03-01T00:30:00+01:00", "2026-02-28T23:30:00.000Z"),
        ("2024-03-01T00:30:00+01:00", "2024-02-29T23:30:00.000Z"),
        ("2026-12-31T23:30:00-01:00", "2027-01-01T00:30:00.000Z"),
        ("2026-03-01T09:00:00+00:00", "2026-03-01T09:00:00.000Z"),
        ("2026-03-01T09:00:00-00:00", "2026-03-01T09:00:00.000Z"),
    ])
    func offsetsAreNormalisedToUTC(_ input: String, _ expected: String) {
        #expect(norm(input) == expected)
    }

    @Test(arguments: [
        ("2026-03-01T09:00:00.1Z", "2026-03-01T09:00:00.100Z"),
        ("2026-03-01T09:00:00.12Z", "2026-03-01T09:00:00.120Z"),
        ("2026-03-01T09:00:00.123Z", "2026-03-01T09:00:00.123Z"),
        ("2026-03-01T09:00:00.123999Z", "2026-03-01T09:00:00.123Z"),
        ("2026-03-01T09:00:00.999999999Z", "2026-03-01T09:00:00.999Z"),
        ("2026-03-01T09:00:00.0000001Z", "2026-03-01T09:00:00.000Z"),
    ])
    func subMillisecondDigitsAreTruncatedNotRounded(_ input: String, _ expected: String) {
        #expect(norm(input) == expected)
    }

    @Test(arguments: ["2024-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "1600-02-29T12:00:00Z"])
    func leapDaysOfLeapYearsAreAccepted(_ input: String) {
        #expect(norm(input) == String(input.dropLast()) + ".000Z")
    }

    @Test(arguments: [
        "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
        "2026-00-10T00:00:00Z", "2026-03-00T00:00:00Z", "2026-03-01T24:00:00Z", "2026-03-01T23:60:00Z",
        "2026-03-01T23:59:60Z", "2026-03-01T09:00:00", "2026-03-01 09:00:00Z", "2026-03-01T09:00Z",
        "2026-03-01T09:00:00.Z", "2026-03-01T09:00:00+0100", "2026-03-01T09:00:00+24:00", "2026-03-01T09:00:00Zjunk",
        "26-03-01T09:00:00Z", "2026-3-1T09:00:00Z", "", "yesterday",
    ])
    func invalidTimesAreRefused(_ input: String) {
        #expect(Timestamp(rfc3339: input) == nil)
    }

    @Test func formattingRoundTripsAroundTheEpochAndTheRangeEnds() {
        for s in ["1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z", "0001-01-01T00:00:00.000Z",
                  "9999-12-31T23:59:59.999Z", "2100-02-28T23:59:59.999Z"] {
            #expect(norm(s) == s)
        }
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")?.milliseconds == 0)
        #expect(Timestamp(rfc3339: "1969-12-31T23:59:59.999Z")?.milliseconds == -1)
    }

    @Test func addingSecondsCrossesDaysAndYears() {
        let t0 = t("2024-12-31T23:59:00Z")
        #expect(t0.adding(seconds: 60).formatted == "2025-01-01T00:00:00.000Z")
        #expect(t0.adding(seconds: -86_400).formatted == "2024-12-30T23:59:00.000Z")
    }
}
