import AuthLedger
import Testing

/// RFC 8785 (JCS) canonical JSON, which the hash chain is computed over.
@Suite struct JSONCanonicalTests {
    func canonical(_ text: String) throws -> String { try JSON.parse(text).canonical() }

    @Test func membersAreSortedByUTF16CodeUnitsAsInRFC8785Section3_2_3() throws {
        // Given the RFC's sorting example (the emoji is a surrogate pair: it sorts before U+FB33)
        let input = #"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#
        // When canonicalised
        let out = try canonical(input)
        // Then the members are in the RFC's order, written as UTF-8 without escapes above U+001F
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\"\u{1F600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        #expect(out == expected)
    }

    @Test func stringsAreEscapedAsInRFC8785Section3_2_2_2() throws {
        // Given the RFC's string example
        let input = #"["\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/"]"#
        // When canonicalised
        // Then: € raw, \u000f in lower-case hex, \n short form, B unescaped, quote and backslash escaped, / unescaped
        #expect(try canonical(input) == "[\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"]")
    }

    @Test func controlCharactersUseShortEscapesWhereTheyExist() throws {
        let input = #"{"s":"\b\f\n\r\t\u0000\u001f\u007f"}"#
        #expect(try canonical(input) == "{\"s\":\"\\b\\f\\n\\r\\t\\u0000\\u001f\u{7f}\"}")
    }

    @Test func whiteSpaceIsRemovedAndNestedMembersAreSortedArraysKeepOrder() throws {
        let input = """
        { "b" : [ 3 , 1 , { "z" : true , "a" : null } ] ,
          "a" : { "y" : -0 , "x" : 10 } , "" : "" }
        """
        #expect(try canonical(input) == #"{"":"","a":{"x":10,"y":0},"b":[3,1,{"a":null,"z":true}]}"#)
    }

    @Test func sortingIsNotByUnicodeScalarsNorByUTF8() throws {
        // By UTF-16, U+10000 (D800 DC00) sorts before U+FF61; by scalar value (and UTF-8) after it.
        let j = JSON.object([("\u{FF61}", .int(1)), ("\u{10000}", .int(2))])
        #expect(j.canonical() == "{\"\u{10000}\":2,\"\u{FF61}\":1}")
    }

    @Test func serializedKeepsTheGivenOrderButCanonicalDoesNot() {
        let j = JSON.object([("b", .int(1)), ("a", .string("x"))])
        #expect(j.serialized() == #"{"b":1,"a":"x"}"#)
        #expect(j.canonical() == #"{"a":"x","b":1}"#)
    }

    @Test func parsingRefusesDuplicateMembersLoneSurrogatesAndBadUTF8() {
        #expect(throws: JSONParseError.self) { try JSON.parse(#"{"a":1,"a":2}"#) }
        #expect(throws: JSONParseError.self) { try JSON.parse(#"["\ud800"]"#) }
        #expect(throws: JSONParseError.self) { try JSON.parse(#"["\udc00x"]"#) }
        #expect(throws: JSONParseError.self) { try JSON.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSON.parse("[1,]") }
    }
}
