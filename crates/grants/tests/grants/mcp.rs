//! MCP grants: which calls `mcp:<server>/<tool>` and `mcp:<server>/*` name, what
//! `constraints.args` matches (a string as it is, a number or boolean as its JSON, nothing
//! else), and what refuses such a grant at load.

use grants::constraints::{
    ArgMismatch, InvalidGrant, McpGrantError, Mismatch, check, for_call, reaches, validate,
};
use proto::Grant;
use proto::mcp::McpArgs;
use proto::tools::ToolArgs;

fn grant(text: &str) -> Grant {
    Grant::from_toml(&format!("mode = \"auto\"\nmax_taint = \"secret\"\n{text}")).expect("grant")
}

fn call(server: &str, tool: &str, arguments: &str) -> ToolArgs {
    ToolArgs::Mcp(McpArgs {
        arguments: arguments.into(),
        server: server.into(),
        tool: tool.into(),
    })
}

#[test]
fn a_grant_names_its_servers_tool_or_all_of_them() {
    let one = grant("tool = \"mcp:web/fetch\"");
    let all = grant("tool = \"mcp:web/*\"");
    let other = grant("tool = \"mcp:webs/*\"");
    let fetch = call("web", "fetch", "{}");
    let head = call("web", "head", "{}");
    assert!(for_call(&one, &fetch) && !for_call(&one, &head));
    assert!(for_call(&all, &fetch) && for_call(&all, &head));
    assert!(!for_call(&other, &fetch));
    assert!(check(&one, &fetch).is_ok());
    assert!(matches!(
        check(&one, &head),
        Err(Mismatch::OtherTool { .. })
    ));
    assert!(!for_call(
        &grant("tool = \"read_file\"\n[constraints]\npaths = [\"/srv\"]"),
        &fetch
    ));
}

#[test]
fn args_match_strings_numbers_and_booleans_and_nothing_else() {
    let g = grant(
        "tool = \"mcp:web/*\"\n[constraints.args]\n\"/url\" = [\"https://example.org/*\"]\n\
         \"/n\" = [\"1?\"]\n\"/raw\" = [\"true\"]\n",
    );
    let ok = call(
        "web",
        "fetch",
        r#"{"n":12,"raw":true,"url":"https://example.org/a"}"#,
    );
    assert!(check(&g, &ok).is_ok());
    let miss = call(
        "web",
        "fetch",
        r#"{"n":12,"raw":true,"url":"https://evil.example/"}"#,
    );
    assert!(matches!(
        check(&g, &miss),
        Err(Mismatch::Args(ArgMismatch::NoPattern { ref pointer, .. })) if pointer == "/url"
    ));
    let gone = call(
        "web",
        "fetch",
        r#"{"raw":true,"url":"https://example.org/a"}"#,
    );
    assert!(matches!(
        check(&g, &gone),
        Err(Mismatch::Args(ArgMismatch::Missing { .. }))
    ));
    let nested = call(
        "web",
        "fetch",
        r#"{"n":[1],"raw":true,"url":"https://example.org/a"}"#,
    );
    assert!(matches!(
        check(&g, &nested),
        Err(Mismatch::Args(ArgMismatch::NotScalar { .. }))
    ));
    // A pointer reads through objects and escapes: ~1 is `/`.
    let deep = grant("tool = \"mcp:web/*\"\n[constraints.args]\n\"/a/b~1c\" = [\"x\"]\n");
    assert!(check(&deep, &call("web", "t", r#"{"a":{"b/c":"x"}}"#)).is_ok());
}

#[test]
fn a_malformed_mcp_grant_is_refused_at_load() {
    let refused = |text: &str| match validate(&grant(text)) {
        Err(InvalidGrant::Mcp(e)) => e,
        other => panic!("{text}: {other:?}"),
    };
    for name in [
        "mcp:Web/x",
        "mcp:web",
        "mcp:/x",
        "mcp:web/a.b",
        "mcp:-web/x",
    ] {
        let e = refused(&format!("tool = \"{name}\""));
        assert!(matches!(e, McpGrantError::Name { .. }), "{name}: {e:?}");
    }
    let e = refused("tool = \"mcp:web/*\"\n[constraints.args]\n\"url\" = [\"*\"]\n");
    assert!(matches!(e, McpGrantError::Pointer { .. }));
    let e = refused("tool = \"mcp:web/*\"\n[constraints.args]\n\"/a~2\" = [\"*\"]\n");
    assert!(matches!(e, McpGrantError::Pointer { .. }));
    let e = refused("tool = \"mcp:web/*\"\n[constraints.args]\n\"/url\" = []\n");
    assert!(matches!(e, McpGrantError::NoPatterns { .. }));
    let e = refused("tool = \"mcp:web/*\"\n[constraints]\nhosts = [\"*.example.org\"]\n");
    assert!(matches!(e, McpGrantError::WildcardHost { .. }));
    let e = refused(
        "tool = \"read_file\"\n[constraints]\npaths = [\"/srv\"]\n[constraints.args]\n\"/p\" = [\"*\"]\n",
    );
    assert!(matches!(e, McpGrantError::ArgsNotMcp { .. }));
    assert!(matches!(
        validate(&grant(
            "tool = \"mcp:web/*\"\n[constraints]\npatterns = [\"*\"]\n"
        )),
        Err(InvalidGrant::NotApplicable {
            list: "patterns",
            ..
        })
    ));
    assert!(validate(&grant("tool = \"mcp:web/*\"\n[constraints]\nhosts = [\"example.org\"]\nprivate_networks = true\n")).is_ok());
}

#[test]
fn an_mcp_grant_reaches_its_paths_and_without_paths_nothing() {
    let with = grant("tool = \"mcp:git/*\"\n[constraints]\npaths = [\"/srv/git\"]\n");
    assert!(reaches(&with, "/srv/git/repo/README", false));
    assert!(!reaches(&with, "/etc/passwd", false));
    let without = grant("tool = \"mcp:git/*\"");
    assert!(!reaches(&without, "/srv/git/repo/README", false));
}
