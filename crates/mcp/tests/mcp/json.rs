//! Strict parsing, the canonical form and JSON pointers.

use mcp::json::{PointerError, canonical, lookup, parse_strict, pointer_tokens};
use serde_json::json;

#[test]
fn a_duplicate_key_is_refused_at_any_depth() {
    for text in [
        r#"{"a":1,"a":2}"#,
        r#"{"x":{"b":true,"b":false}}"#,
        r#"[{"k":1},{"k":1,"k":1}]"#,
    ] {
        let err = parse_strict(text.as_bytes()).expect_err(text);
        assert!(err.to_string().contains("duplicate key"), "{text}: {err}");
    }
    // serde_json::Value itself keeps the last one: the reason this parser exists.
    let lax: serde_json::Value = serde_json::from_str(r#"{"a":1,"a":2}"#).expect("lax");
    assert_eq!(lax, json!({"a": 2}));
}

#[test]
fn trailing_bytes_and_non_json_are_refused() {
    for text in [r#"{"a":1} x"#, r#"{"a":1}{"b":2}"#, "{'a':1}", "", "NaN"] {
        assert!(parse_strict(text.as_bytes()).is_err(), "{text:?}");
    }
    assert_eq!(
        parse_strict(b" {\"a\":[1,2.5,null]}\n").expect("ok"),
        json!({"a": [1, 2.5, null]})
    );
}

#[test]
fn canonical_sorts_keys_by_bytes_and_drops_whitespace() {
    let value =
        parse_strict(r#" { "b" : 1, "a" : { "z": [ 1, 2 ], "Z": "é\n" }, "é": null } "#.as_bytes())
            .expect("parse");
    assert_eq!(
        canonical(&value),
        r#"{"a":{"Z":"é\n","z":[1,2]},"b":1,"é":null}"#
    );
    // The same value however it was written.
    let again =
        parse_strict(r#"{"é":null,"a":{"z":[1,2],"Z":"é\n"},"b":1}"#.as_bytes()).expect("parse");
    assert_eq!(canonical(&again), canonical(&value));
    assert_eq!(canonical(&json!(1.5e3)), "1500.0");
}

#[test]
fn pointers_follow_rfc_6901() {
    let value = json!({"a/b": {"m~n": [10, 20]}, "": 1, "list": ["x"]});
    assert_eq!(
        lookup(&value, "/a~1b/m~0n/1").expect("ok"),
        Some(&json!(20))
    );
    assert_eq!(lookup(&value, "/").expect("ok"), Some(&json!(1)));
    assert_eq!(lookup(&value, "").expect("ok"), Some(&value));
    assert_eq!(lookup(&value, "/list/0").expect("ok"), Some(&json!("x")));
    // Leading zeros, `-` and out-of-range indexes name nothing.
    for absent in ["/list/00", "/list/-", "/list/1", "/nope", "/list/0/deeper"] {
        assert_eq!(lookup(&value, absent).expect("syntax ok"), None, "{absent}");
    }
    assert_eq!(
        pointer_tokens("a"),
        Err(PointerError::NoLeadingSlash("a".into()))
    );
    assert_eq!(
        pointer_tokens("/a~2"),
        Err(PointerError::BadEscape("/a~2".into()))
    );
    assert!(pointer_tokens("/a~").is_err());
}
