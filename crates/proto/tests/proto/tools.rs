//! Tool arguments: strict parsing, the canonical form, every tool by name.

use proto::tools::{ArgsError, MAX_ARGUMENTS, TOOL_NAMES, ToolArgs};

#[test]
fn strict_parse_and_canonical_form() {
    let a = ToolArgs::parse("read_file", "{ \"path\" : \"/n\\u0061\" }").expect("valid");
    assert_eq!(a.canonical(), r#"{"path":"/na"}"#);
    for (tool, bad, word) in [
        (
            "read_file",
            r#"{"path":"/a","path":"/b"}"#,
            "duplicate field",
        ),
        ("read_file", r#"{"path":"/a","mode":"x"}"#, "unknown field"),
        ("read_file", r#"{"path":1}"#, "invalid type"),
        ("read_file", r#"{"path":null}"#, "invalid type"),
        ("read_file", r#"{"path":["/a"]}"#, "invalid type"),
        ("read_file", r#"["/a"]"#, "invalid type"),
        ("read_file", r#"{}"#, "missing field"),
        ("read_file", r#"{"path":"/a"} {}"#, "trailing"),
        ("http_fetch", r#""https://x""#, "invalid type"),
        ("consult", r#"{"prompt":true}"#, "invalid type"),
    ] {
        let err = ToolArgs::parse(tool, bad).expect_err(bad).to_string();
        assert!(err.contains(word), "{bad}: {err}");
    }
    let long = format!(r#"{{"path":"/{}"}}"#, "a".repeat(MAX_ARGUMENTS));
    assert!(ToolArgs::parse("read_file", &long).is_err());
    assert_eq!(
        ToolArgs::parse("shell", "{}"),
        Err(ArgsError::UnknownTool("shell".into()))
    );
}

#[test]
fn every_tool_name_parses_and_names_itself() {
    let samples = [
        r#"{"path":"/a"}"#,
        r#"{"path":"/a"}"#,
        r#"{"url":"https://a/"}"#,
        r#"{"prompt":"p"}"#,
        r#"{"mode":"replace","name":"n","text":"t"}"#,
        r#"{"name":"n"}"#,
        r#"{}"#,
        r#"{"query":"q"}"#,
        r#"{"query":"q"}"#,
        r#"{"content":"c","mode":"create","path":"/a"}"#,
        r#"{"new":"b","old":"a","path":"/a"}"#,
        r#"{"args":["-V"],"program":"python3"}"#,
    ];
    assert_eq!(samples.len(), TOOL_NAMES.len());
    for (name, args) in TOOL_NAMES.iter().zip(samples) {
        let parsed = ToolArgs::parse(name, args).expect(name);
        assert_eq!(parsed.tool(), *name);
        assert_eq!(parsed.canonical(), args);
    }
}
