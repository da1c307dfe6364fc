@_spi(Storage) import AuthLedger
@testable import AuthLedgerServer
@testable import AuthLedgerSharedSignals
import Foundation
import NIOHTTP1
import Testing

/// The stream management routes as SSF 1.0 and openapi.yaml state them, at the edges:
/// what the document allows is taken, what it does not is refused with 400.
@Suite(.timeLimit(.minutes(3))) struct SSFExactnessTests {
    @Test func theEndpointURLPatternIsTheDocumentsOwn() throws {
        let documented = try OpenAPIDocument().quoted(["components", "schemas", "SSFEndpointURL"], "pattern")
        #expect(documented == SSFEndpointURL.pattern)
        for ok in ["https://receiver.example/events", "http://10.0.0.7:8080/ssf?tenant=a%2Fb", "HTTPS://r.example:65535", "https://r.example/a/b/c;x=1"] {
            #expect(SSFEndpointURL.accepts(ok), "\(ok)")
        }
        for bad in ["", "ftp://r.example/", "https://user@r.example/", "https://r.example/#f", "https://r.example:65536/",
                     "https://r.example/%zz", "https://r.example/\n", "https:///x", "https://r.example/ x",
                     "https://r.example/" + String(repeating: "a", count: 2048)] {
            #expect(!SSFEndpointURL.accepts(bad), "\(bad)")
        }
    }

    @Test func readWithoutAStreamIdListsEveryStreamAndDeleteAndStatusNeedOne() async throws {
        try await withServer(configure: SharedSignalsTests.configure) { s in
            // No stream: an empty list (SSF 1.0 8.1.1.2)
            var r = try await s.call(.GET, "/ssf/streams")
            #expect(r.status == 200 && r.json == .array([]), "\(r.body)")
            _ = try await s.call(.POST, "/ssf/streams", body: #"{"description":"one"}"#)
            _ = try await s.call(.POST, "/ssf/streams", body: #"{"description":"two"}"#)
            r = try await s.call(.GET, "/ssf/streams")
            #expect(r.json?.arrayValue?.compactMap { $0["description"]?.stringValue }.sorted() == ["one", "two"])
            // DELETE and GET status need stream_id (SSF 1.0 8.1.1.5, 8.1.2.1): 400 naming it
            for (method, path) in [(HTTPMethod.DELETE, "/ssf/streams"), (.GET, "/ssf/status")] {
                r = try await s.call(method, path)
                #expect(r.status == 400 && r.error == "invalid_event" && r["field"] == .string("stream_id"), "\(method) \(path): \(r.body)")
            }
            #expect(try await s.call(.GET, "/ssf/streams").json?.arrayValue?.count == 2)
        }
    }

    @Test func bodiesAreCheckedAsTheDocumentSays() async throws {
        try await withServer(configure: SharedSignalsTests.configure) { s in
            // Push URLs and audiences outside the documented form: 400
            for body in [#"{"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":""}}"#,
                         #"{"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"https://u@r.example/"}}"#,
                         #"{"delivery":{"method":"urn:ietf:rfc:8936","endpoint_url":5}}"#,
                         #"{"aud":""}"#, #"{"iss":"https://t.example"}"#] {
                let r = try await s.call(.POST, "/ssf/streams", body: body)
                #expect(r.status == 400 && r.error == "invalid_event", "\(body): \(r.status) \(r.body)")
            }
            // Lengths are counted in characters, as JSON Schema counts them: 512 two-byte characters is an audience
            let aud = String(repeating: "é", count: 512)
            var r = try await s.call(.POST, "/ssf/streams", body: #"{"aud":"\#(aud)","delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"https://r.example:8443/a%2Fb?x=1"}}"#)
            #expect(r.status == 201, "\(r.body)")
            #expect(try await s.call(.POST, "/ssf/streams", body: #"{"aud":"\#(aud)é"}"#).status == 400)
            r = try await s.call(.POST, "/ssf/streams", body: #"{}"#)
            let id = try #require(r["stream_id"]?.stringValue)
            // The verification state is any string (SSF 1.0 8.1.4.2) of at most 1024 characters
            let state = #"line one\nline two \u0001 "# + String(repeating: "é", count: 1000)
            r = try await s.call(.POST, "/ssf/verify", body: #"{"stream_id":"\#(id)","state":"\#(state)"}"#)
            #expect(r.status == 204, "\(r.body)")
            r = try await s.call(.POST, "/ssf/verify", body: #"{"stream_id":"\#(id)","state":"\#(String(repeating: "é", count: 1025))"}"#)
            #expect(r.status == 400 && r["field"] == .string("state"))
            // Poll: maxEvents is a maximum (RFC 8936): a large one is taken, the answer holds at most 1000
            r = try await s.call(.POST, "/ssf/poll/\(id)", token: "reader-token", body: #"{"maxEvents":78808193732946560,"returnImmediately":true}"#)
            #expect(r.status == 200, "\(r.body)")
            for body in [#"{"maxEvents":-1}"#, #"{"maxEvents":1.5}"#, #"{"setErrs":{"x":{"err":"e","description":5}}}"#] {
                r = try await s.call(.POST, "/ssf/poll/\(id)", token: "reader-token", body: body)
                #expect(r.status == 400, "\(body): \(r.body)")
            }
            // A push stream has no poll endpoint (its configuration names none): 404
            r = try await s.call(.POST, "/ssf/streams", body: #"{"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"https://r.example/events"}}"#)
            let push = try #require(r["stream_id"]?.stringValue)
            r = try await s.call(.POST, "/ssf/poll/\(push)", token: "reader-token", body: #"{"returnImmediately":true}"#)
            #expect(r.status == 404 && r.error == "not_found", "\(r.body)")
            // Transmitter members echoed in an update are of their type
            r = try await s.call(.PATCH, "/ssf/streams", body: #"{"stream_id":"\#(id)","events_delivered":"x"}"#)
            #expect(r.status == 400 && r["field"] == .string("events_delivered"), "\(r.body)")
        }
    }
}
