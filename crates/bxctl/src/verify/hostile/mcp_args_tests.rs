//! The arguments an MCP stand-in's call carries to meet its grant's `constraints.args`
//! (`mcp_args`), checked with brokerd's own check.

use std::path::Path;

use proto::mcp::McpArgs;
use proto::tools::ToolArgs;

use super::chains;
use super::mcp;
use super::mcp_args;
use super::rewrite::Rewritten;
use super::tests::grant;

fn git(extra: &str) -> proto::Grant {
    grant(&format!(
        "tool = \"mcp:git/*\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         [constraints]\nhosts = [\"git.example.org\"]\n[constraints.args]\n{extra}"
    ))
}

/// brokerd's check of a call of `mcp:git/TOOL` with `arguments`.
fn covered(g: &proto::Grant, tool: &str, arguments: &str) -> bool {
    let call = ToolArgs::Mcp(McpArgs {
        arguments: arguments.to_owned(),
        server: "git".into(),
        tool: tool.into(),
    });
    grants::constraints::check(g, &call).is_ok()
}

/// Each pointer gets a value its patterns admit (nested ones in objects made on the way),
/// the canary's field is one no pointer takes, and brokerd admits the call.
#[test]
fn pinned_arguments_meet_the_grant() {
    let g = git("\"/repo_path\" = [\"/srv/git/*\"]\n\"/opts/branch\" = [\"main\", \"dev-*\"]\n");
    let p = mcp_args::pinned(&g, mcp::WILD).expect("met");
    assert_eq!(
        serde_json::Value::Object(p.clone()),
        serde_json::json!({"opts": {"branch": "main"}, "repo_path": "/srv/git/bxhostile"})
    );
    assert_eq!(mcp_args::carrier(&p), "data");
    let sent = mcp_args::with(&p, "data", "Keep this for me: BXCANARY-1");
    assert!(covered(&g, mcp::WILD, &sent), "{sent}");
    // Without the pinned arguments brokerd refuses the call: they are what it needs.
    assert!(!covered(
        &g,
        mcp::WILD,
        &mcp_args::sent("Keep this for me: BXCANARY-1")
    ));

    // A pointer taking `data`: the canary goes elsewhere.
    let g = git("\"/data\" = [\"?-*\"]\n");
    let p = mcp_args::pinned(&g, mcp::WILD).expect("met");
    assert_eq!(p["data"], "x-bxhostile");
    assert_eq!(mcp_args::carrier(&p), "bxhostile_data0");
    assert!(covered(
        &g,
        mcp::WILD,
        &mcp_args::with(&p, "bxhostile_data0", "BXCANARY-2")
    ));

    // Pointers that overlap: no one call meets them.
    let g = git("\"/repo\" = [\"a*\"]\n\"/repo/path\" = [\"b\"]\n");
    let why = mcp_args::pinned(&g, mcp::WILD).expect_err("unmet");
    assert!(why.contains("overlap (/repo/path)"), "{why}");
}

/// The plan's send and source calls of a grant with args carry arguments brokerd admits,
/// the send's canary among them.
#[test]
fn the_chains_calls_meet_the_grant() {
    let mut r = Rewritten::default();
    r.grants.insert(
        "notes".into(),
        grant(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             [constraints]\npaths = [\"/s/tree/home/owner/notes\"]\n",
        ),
    );
    r.paths.insert(
        "/home/owner/notes".into(),
        (std::path::PathBuf::from("/s/tree/home/owner/notes"), false),
    );
    r.grants
        .insert("git".into(), git("\"/repo_path\" = [\"/srv/git/*\"]\n"));
    r.grants.insert(
        "web".into(),
        grant(
            "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             [constraints]\nhosts = [\"api.example.org\"]\n",
        ),
    );
    let owner =
        config::mcp_file("[[mcp]]\nname = \"git\"\ncommand = [\"/opt/owner/git\"]\n").expect("mcp");
    let dir = std::env::temp_dir().join(format!("wt-hostile-mcpargs-{}", std::process::id()));
    let _ = mcp::prepare(&owner, &mut r, Some(Path::new("/x/fake")), &dir);
    assert!(r.left.is_empty(), "{:?}", r.left);
    let mut plan = chains::plan(&r, 4321, "n0", false);
    mcp_args::carry(&r, &mut plan);
    let g = &r.grants["git"];
    let send = plan
        .iter()
        .find(|c| c.sink.tool == "mcp" && c.source.tool == "read_file")
        .expect("a read sent through the git stand-in");
    let script = super::script::script_with(&plan, Vec::new()).expect("script");
    let sent = serde_json::json!({"data": format!("Keep this for me: {}", send.canary), "repo_path": "/srv/git/bxhostile"}).to_string();
    assert_eq!(send.url, sent);
    assert!(covered(g, mcp::WILD, &send.url));
    assert!(
        script.contains(&toml::Value::String(sent).to_string()),
        "{script}"
    );

    let source = plan
        .iter()
        .find(|c| c.source.tool == "mcp")
        .expect("the git stand-in's tool as a source");
    assert_eq!(
        mcp::source_called(&source.source),
        "mcp__git__bxhostile_tool"
    );
    let (name, args) = mcp::source_call(&source.source);
    assert_eq!(name, "mcp__git__bxhostile_tool");
    assert!(covered(g, mcp::WILD, &args), "{args}");
}
