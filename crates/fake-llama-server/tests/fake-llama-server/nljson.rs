//! nlohmann::json's parse errors, as the real server words them (`nljson`).

use fake_llama_server::nljson::parse_error;

/// What llama-server (xllamacpp 2026.10.11549) answered for each text, after
/// "Failed to parse tool call arguments as JSON: ".
const REAL: &[(&str, &str)] = &[
    (
        "{\"city\": \"Ber",
        "line 1, column 14: syntax error while parsing value - invalid string: missing closing quote; last read: '\"Ber'",
    ),
    (
        "{\"city\": \"Berlin\",",
        "line 1, column 19: syntax error while parsing object key - unexpected end of input; expected string literal",
    ),
    (
        "{\"city\":",
        "line 1, column 9: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal",
    ),
    (
        "{",
        "line 1, column 2: syntax error while parsing object key - unexpected end of input; expected string literal",
    ),
    (
        "{\"city\": \"Berlin\"",
        "line 1, column 18: syntax error while parsing object - unexpected end of input; expected '}'",
    ),
    (
        "{\"ci",
        "line 1, column 5: syntax error while parsing object key - invalid string: missing closing quote; last read: '\"ci'; expected string literal",
    ),
    (
        "{\"n\": 12",
        "line 1, column 9: syntax error while parsing object - unexpected end of input; expected '}'",
    ),
    (
        "{\"a\": [1,",
        "line 1, column 10: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal",
    ),
    (
        "{\"a\": tr",
        "line 1, column 9: syntax error while parsing value - invalid literal; last read: '\"a\": tr'",
    ),
    (
        "not json",
        "line 1, column 2: syntax error while parsing value - invalid literal; last read: 'no'",
    ),
    (
        "{\"city\": \"Berlin\"}}",
        "line 1, column 19: syntax error while parsing value - unexpected '}'; expected end of input",
    ),
    (
        "{\n  \"city\": \"Ber",
        "line 2, column 15: syntax error while parsing value - invalid string: missing closing quote; last read: '\"Ber'",
    ),
    (
        "{\"a\": [1",
        "line 1, column 9: syntax error while parsing array - unexpected end of input; expected ']'",
    ),
    (
        "{\"a\": \"x\\\"y",
        "line 1, column 12: syntax error while parsing value - invalid string: missing closing quote; last read: '\"x\\\"y'",
    ),
    (
        "{\"a\": \"x\\",
        "line 1, column 10: syntax error while parsing value - invalid string: forbidden character after backslash; last read: '\"x\\'",
    ),
    (
        "{\"a\": \"é",
        "line 1, column 10: syntax error while parsing value - invalid string: missing closing quote; last read: '\"é'",
    ),
    (
        "{\"a\": \"x\\u00",
        "line 1, column 13: syntax error while parsing value - invalid string: '\\u' must be followed by 4 hex digits; last read: '\"x\\u00'",
    ),
    (
        "{\"a\": 1.",
        "line 1, column 9: syntax error while parsing value - invalid number; expected digit after '.'; last read: '1.'",
    ),
    (
        "{\"a\": -",
        "line 1, column 8: syntax error while parsing value - invalid number; expected digit after '-'; last read: '-'",
    ),
    (
        "{\"a\": {",
        "line 1, column 8: syntax error while parsing object key - unexpected end of input; expected string literal",
    ),
    (
        "  ",
        "line 1, column 3: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal",
    ),
    (
        "\n",
        "line 2, column 1: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal",
    ),
    (
        "{\"a\": \"x\ny\"}",
        "line 2, column 0: syntax error while parsing value - invalid string: control character U+000A (LF) must be escaped to \\u000A or \\n; last read: '\"x<U+000A>'",
    ),
    (
        "{\"a\": \"\\ud800\"}",
        "line 1, column 14: syntax error while parsing value - invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF; last read: '\"\\ud800\"'",
    ),
    (
        "{\"a\": \"\\udc00\"}",
        "line 1, column 13: syntax error while parsing value - invalid string: surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF; last read: '\"\\udc00'",
    ),
    (
        "{\"a\": 1e",
        "line 1, column 9: syntax error while parsing value - invalid number; expected '+', '-', or digit after exponent; last read: '1e'",
    ),
    (
        "{\"a\": 1e+",
        "line 1, column 10: syntax error while parsing value - invalid number; expected digit after exponent sign; last read: '1e+'",
    ),
    (
        "{\"a\": 01}",
        "line 1, column 8: syntax error while parsing object - unexpected number literal; expected '}'",
    ),
    (
        "{\"a\" 1",
        "line 1, column 6: syntax error while parsing object separator - unexpected number literal; expected ':'",
    ),
    (
        "{\"a\"",
        "line 1, column 5: syntax error while parsing object separator - unexpected end of input; expected ':'",
    ),
    (
        "[1 2]",
        "line 1, column 4: syntax error while parsing array - unexpected number literal; expected ']'",
    ),
    (
        "{\"a\": nul",
        "line 1, column 10: syntax error while parsing value - invalid literal; last read: '\"a\": nul'",
    ),
    (
        "{\"a\":\n tr",
        "line 2, column 4: syntax error while parsing value - invalid literal; last read: '\"a\":<U+000A> tr'",
    ),
    (
        "{\"a\":1,}",
        "line 1, column 8: syntax error while parsing object key - unexpected '}'; expected string literal",
    ),
];

#[test]
fn each_text_gets_the_real_servers_words() {
    for (text, want) in REAL {
        assert_eq!(
            parse_error(text),
            Some(format!(
                "[json.exception.parse_error.101] parse error at {want}"
            )),
            "{text:?}"
        );
    }
    assert_eq!(
        parse_error("").as_deref(),
        Some(
            "[json.exception.parse_error.101] parse error at line 1, column 1: attempting \
             to parse an empty input; check that your input string or stream contains the \
             expected JSON"
        )
    );
}

#[test]
fn json_is_no_error() {
    for text in [
        "{}",
        "[]",
        "\"s\"",
        "[1]",
        " {\"a\": [1, -2.5e+3, true, false, null, {\"b\": \"\\u00e9\\ud83d\\ude00\"}]} ",
        "0",
    ] {
        assert_eq!(parse_error(text), None, "{text}");
    }
}
