//! The input-schema subset: what compiles, what is refused, and what arguments pass.

use mcp::Schema;
use mcp::args::{self, ArgsError};
use serde_json::{Value, json};

fn compile(schema: Value) -> Schema {
    Schema::compile(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"))
}

fn refused(schema: Value) -> String {
    Schema::compile(&schema)
        .expect_err(&schema.to_string())
        .to_string()
}

fn check(schema: &Schema, args: &str) -> Result<String, String> {
    args::parse(args, schema)
        .map(|a| a.canonical)
        .map_err(|e| e.to_string())
}

/// mcp-server-fetch's schema (2026.10.24), as it lists it.
fn fetch() -> Schema {
    compile(json!({"properties": {
        "url": {"description": "URL to fetch", "format": "uri", "minLength": 1, "title": "Url", "type": "string"},
        "max_length": {"default": 5000, "description": "Maximum number of characters to return.", "maximum": 999999, "minimum": 1, "title": "Max Length", "type": "integer"},
        "start_index": {"default": 0, "minimum": 0, "title": "Start Index", "type": "integer"},
        "raw": {"default": false, "title": "Raw", "type": "boolean"}},
        "required": ["url"], "type": "object", "title": "fetchArguments"}))
}

#[test]
fn the_reference_servers_keywords_compile() {
    fetch();
    // mcp-server-git's git_log: anyOf of a string and null.
    compile(
        json!({"properties": {"repo_path": {"title": "Repo Path", "type": "string"},
        "start_timestamp": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Start Timestamp"}},
        "required": ["repo_path"], "type": "object", "title": "logArguments"}),
    );
    // server-filesystem's edit_file: $schema, nested objects in items.
    compile(
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {
        "path": {"type": "string"},
        "edits": {"type": "array", "items": {"type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}, "required": ["oldText", "newText"]}},
        "dryRun": {"default": false, "type": "boolean"}}, "required": ["path", "edits"]}),
    );
    // server-everything's get-env: no properties at all.
    compile(
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {}}),
    );
}

#[test]
fn every_unsupported_keyword_refuses_the_schema() {
    for keyword in [
        "pattern",
        "$ref",
        "$defs",
        "allOf",
        "not",
        "uniqueItems",
        "multipleOf",
        "if",
        "patternProperties",
        "dependentRequired",
        "nullable",
    ] {
        let err = refused(
            json!({"type": "object", "properties": {"a": {"type": "string", keyword: "x"}}}),
        );
        assert!(
            err.contains(&format!("the keyword {keyword:?} is not supported")),
            "{keyword}: {err}"
        );
        assert!(
            err.contains("/properties/a/"),
            "{keyword} is located: {err}"
        );
    }
}

#[test]
fn malformed_schemas_are_refused() {
    for (schema, why) in [
        (json!({"properties": {}}), "root must say"),
        (json!({"type": ["object"]}), "root must say"),
        (json!([1]), "not an object"),
        (
            json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}),
            "dialect",
        ),
        (
            json!({"type": "object", "properties": {"a": {"$schema": "x"}}}),
            "root only",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "text"}}}),
            "not a JSON Schema type",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": ["string", "string"]}}}),
            "twice",
        ),
        (
            json!({"type": "object", "required": ["a"]}),
            "not declared in properties",
        ),
        (
            json!({"type": "object", "properties": {"a": {"minLength": -1}}}),
            "non-negative",
        ),
        (
            json!({"type": "object", "properties": {"a": {"exclusiveMinimum": true}}}),
            "must be a number",
        ),
        (
            json!({"type": "object", "properties": {"a": {"items": [{"type": "string"}]}}}),
            "tuples",
        ),
        (
            json!({"type": "object", "properties": {"a": {"enum": []}}}),
            "at least one",
        ),
        (
            json!({"type": "object", "properties": {"a": {"anyOf": []}}}),
            "at least one",
        ),
        (
            json!({"type": "object", "properties": {"a": 3}}),
            "object or a boolean",
        ),
    ] {
        let err = refused(schema.clone());
        assert!(err.contains(why), "{schema}: {err}");
    }
}

#[test]
fn nesting_and_size_are_bounded() {
    let mut deep = json!({"type": "string"});
    for _ in 0..=mcp::schema::MAX_DEPTH {
        deep = json!({"type": "array", "items": deep});
    }
    let err = refused(json!({"type": "object", "properties": {"a": deep}}));
    assert!(err.contains("levels deep"), "{err}");
    let wide: serde_json::Map<String, Value> = (0..=mcp::schema::MAX_NODES)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let err = refused(json!({"type": "object", "properties": wide}));
    assert!(err.contains("schemas in all"), "{err}");
}

#[test]
fn arguments_are_checked_and_made_canonical() {
    let schema = fetch();
    assert_eq!(
        check(
            &schema,
            r#" { "raw": true, "url": "https://example.org/" } "#
        ),
        Ok(r#"{"raw":true,"url":"https://example.org/"}"#.into())
    );
    for (args, why) in [
        (r#"{"url":"https://a","url":"https://b"}"#, "duplicate key"),
        (r#"["https://a"]"#, "must be a JSON object"),
        (r#"{}"#, "\"url\" is required"),
        (r#"{"url":""}"#, "at /url: shorter than 1"),
        (r#"{"url":5}"#, "at /url: expected string, found integer"),
        (r#"{"url":"u","max_length":0}"#, "less than the minimum 1"),
        (
            r#"{"url":"u","max_length":1000000}"#,
            "more than the maximum 999999",
        ),
        (
            r#"{"url":"u","max_length":10.0}"#,
            "expected integer, found a number with a fraction",
        ),
        (r#"{"url":"u","raw":"true"}"#, "expected boolean"),
        (r#"{"url":"u","extra":1}"#, "\"extra\" is not declared"),
    ] {
        let err = check(&schema, args).expect_err(args);
        assert!(err.contains(why), "{args}: {err}");
    }
    let big = format!(r#"{{"url":"{}"}}"#, "a".repeat(proto::tools::MAX_ARGUMENTS));
    assert!(matches!(
        args::parse(&big, &schema),
        Err(ArgsError::TooLarge { .. })
    ));
}

#[test]
fn the_other_keywords_check_what_they_say() {
    let schema = compile(
        json!({"type": "object", "additionalProperties": {"type": "integer"}, "properties": {
        "kind": {"enum": ["a", 1, null]},
        "exact": {"const": {"x": [1, 2]}},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1, "maxItems": 2},
        "either": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 5}]},
        "loose": {"type": "object", "additionalProperties": true},
        "never": false,
        "name": {"type": ["string", "null"], "maxLength": 2}}}),
    );
    for ok in [
        r#"{"kind":"a","exact":{"x":[1,2.0]},"ratio":0.5,"tags":["abc"],"either":7.5,"loose":{"any":[1]},"name":null,"n":7}"#,
        r#"{"kind":1.0,"either":3,"name":"éé"}"#,
    ] {
        check(&schema, ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for (args, why) in [
        (r#"{"kind":"b"}"#, "enum"),
        (r#"{"exact":{"x":[1]}}"#, "const"),
        (r#"{"ratio":0}"#, "not more than 0"),
        (r#"{"ratio":1}"#, "not less than 1"),
        (r#"{"tags":[]}"#, "fewer than 1 items"),
        (r#"{"tags":["a","b","c"]}"#, "more than 2 items"),
        (r#"{"tags":["abcd"]}"#, "at /tags/0: longer than 3"),
        (r#"{"either":6}"#, "matches 2 of the schemas in oneOf"),
        (r#"{"either":"x"}"#, "matches 0"),
        (r#"{"never":1}"#, "at /never: no value is allowed"),
        (r#"{"name":"abc"}"#, "longer than 2"),
        (r#"{"n":"seven"}"#, "at /n: expected integer"),
    ] {
        let err = check(&schema, args).expect_err(args);
        assert!(err.contains(why), "{args}: {err}");
    }
    // anyOf: git's optional strings.
    let git = compile(
        json!({"type": "object", "properties": {"since": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}),
    );
    check(&git, r#"{"since":null}"#).expect("null");
    let err = check(&git, r#"{"since":3}"#).expect_err("number");
    assert!(err.contains("none of the schemas in anyOf"), "{err}");
}
