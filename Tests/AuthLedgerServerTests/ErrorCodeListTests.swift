@_spi(Storage) import AuthLedger
@testable import AuthLedgerServer
@testable import AuthLedgerSharedSignals
import Foundation
import Testing

/// Errors and codes, one list: every code the ledger (`ErrorCode`), the HTTP API
/// (`HTTPRefusal.Code`) and the Shared Signals transmitter (`SharedSignalsRefusal.Code`) can answer is in docs/REFERENCE.md's code table, with the status
/// the service answers, and in openapi.yaml's `Error` schema — and nothing else is.
@Suite struct ErrorCodeListTests {
    /// Every code, with the status the service answers it with.
    static var codes: [String: Int] {
        var all: [String: Int] = [:]
        for c in ErrorCode.allCases { all[c.rawValue] = Int(APIError.status(for: c).code) }
        for c in HTTPRefusal.Code.allCases { all[c.rawValue] = Int(APIError.response(HTTPRefusal(c, "")).status.code) }
        for c in SharedSignalsRefusal.Code.allCases { all[c.rawValue] = Int(APIError.response(HTTPRefusal(SharedSignalsRefusal(c, ""))).status.code) }
        return all
    }

    /// A transmitter's refusal becomes the API's own refusal of the same code and message,
    /// so it is answered with the same status, headers and body.
    @Test(arguments: SharedSignalsRefusal.Code.allCases) func sharedSignalsRefusalsAnswerAsTheAPIsOwn(_ c: SharedSignalsRefusal.Code) throws {
        let own = try #require(HTTPRefusal.Code(rawValue: c.rawValue), "\(c.rawValue) is not one of the API's own codes")
        #expect(HTTPRefusal(SharedSignalsRefusal(c, "a message")) == HTTPRefusal(own, "a message"))
    }

    @Test func theReferenceTableListsEveryCodeWithItsStatus() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/REFERENCE.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex(of: "| code | HTTP status | when |"), "docs/REFERENCE.md has no code table")
        var table: [String: Int] = [:]
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let code = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            #expect(table[code] == nil, "\(code) is listed twice")
            table[code] = Int(cells[1].prefix(3))  // the status the code is answered with; a note may follow
        }
        for (code, status) in Self.codes.sorted(by: { $0.key < $1.key }) {
            #expect(table[code] != nil, "\(code) is not in docs/REFERENCE.md's code table")
            if let listed = table[code] { #expect(listed == status, "\(code): the table says \(listed), the service answers \(status)") }
        }
        #expect(Set(table.keys).subtracting(Self.codes.keys).sorted() == [], "listed in docs/REFERENCE.md but no such code")
    }

    @Test func theOpenAPIErrorSchemaEnumeratesEveryCode() throws {
        let listed = try OpenAPIDocument().listItems(["components", "schemas", "Error", "properties", "error", "enum"])
        #expect(listed.count == Set(listed).count, "a code is listed twice")
        #expect(Set(Self.codes.keys).subtracting(listed).sorted() == [], "not in openapi.yaml's Error enum")
        #expect(Set(listed).subtracting(Self.codes.keys).sorted() == [], "in openapi.yaml's Error enum but no such code")
    }
}
