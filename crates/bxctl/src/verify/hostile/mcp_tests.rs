//! The MCP stand-ins and the consult's answer as a source, without a stack: which servers
//! the shadow stands in for, the chains through them, the stand-ins' scripts, and the
//! comparison of their flows.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proto::flows::{Flow, FlowsReport, Severity, Step};
use proto::{CallId, DataClass, Hash32, ToolResponse};

use super::chains::{self, Chain};
use super::compare::{self, Outcome};
use super::mcp;
use super::rewrite::{Left, Rewritten, Scope};
use super::session::Seen;
use super::tests::grant;

fn owner() -> Vec<config::McpServer> {
    config::mcp_file(
        "[[mcp]]\nname = \"files\"\ncommand = [\"/opt/owner/files-server\"]\n\
         [[mcp]]\nname = \"tracker\"\nurl = \"http://192.168.1.20:8931/mcp\"\n\
         [[mcp]]\nname = \"git\"\ncommand = [\"/opt/owner/git-server\"]\n",
    )
    .expect("mcp")
}

/// A read of the notes, and MCP grants: `files/put` listing a host (a sink), `files/*`
/// without hosts (a source only), a remote server's, one constraining the arguments in a
/// way no call meets (`mcp_args`) and one of a server not configured.
fn with_mcp() -> Rewritten {
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
        (PathBuf::from("/s/tree/home/owner/notes"), false),
    );
    let mcp = |tool: &str, extra: &str| {
        grant(&format!(
            "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"private\"\n{extra}"
        ))
    };
    r.grants.insert(
        "files-put".into(),
        mcp(
            "mcp:files/put",
            "[constraints]\nhosts = [\"uploads.example.org\"]\n",
        ),
    );
    r.grants.insert(
        "files-all".into(),
        mcp("mcp:files/*", "result_class = \"private\"\n"),
    );
    r.grants.insert(
        "tracker".into(),
        mcp(
            "mcp:tracker/*",
            "[constraints]\nhosts = [\"192.168.1.20\"]\n",
        ),
    );
    r.grants.insert(
        "git".into(),
        mcp(
            "mcp:git/log",
            "[constraints.args]\n\"/repo\" = [\"/srv/git/*\"]\n\"/repo/path\" = [\"x\"]\n",
        ),
    );
    r.grants.insert("nowhere".into(), mcp("mcp:nowhere/x", ""));
    r
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wt-hostile-mcp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A configured server whose grants name no arguments gets a stand-in, a remote one too;
/// every other MCP grant is left out with its reason, and all are without
/// `fake-mcp-server`.
#[test]
fn stand_ins_for_configured_servers_only() {
    let dir = scratch("prepare");
    let mut r = with_mcp();
    let fake = Path::new("/opt/bx/fake-mcp-server");
    let s = mcp::prepare(&owner(), &mut r, Some(fake), &dir);
    assert_eq!(
        r.grants.keys().map(String::as_str).collect::<Vec<_>>(),
        ["files-all", "files-put", "notes", "tracker"]
    );
    let left: Vec<(&str, &str)> = r
        .left
        .iter()
        .map(|l| (l.grant.as_str(), l.why.as_str()))
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left.contains(&(
        "git",
        "a grant of server git (mcp:git/log) names constraints.args no call of the stand-in's \
         meets: its args constraints' pointers overlap (/repo/path): no one call meets them"
    )));
    assert!(left.contains(&(
        "nowhere",
        "server nowhere is not configured ([[mcp]]): brokerd refuses its calls"
    )));
    assert!(!r.grants.contains_key("git") && r.grants.contains_key("files-put"));
    assert!(s.toml().is_empty(), "written with the scripts");

    let mut none = with_mcp();
    let s = mcp::prepare(&owner(), &mut none, None, &dir);
    assert!(s.toml().is_empty());
    assert_eq!(none.left.len(), 5);
    assert!(
        none.left
            .iter()
            .all(|l| l.why.starts_with("fake-mcp-server is not installed"))
    );
    assert_eq!(none.grants.keys().collect::<Vec<_>>(), ["notes"]);
}

/// [`with_mcp`] less its remote server (whose stand-in `write` would start).
fn planned() -> (Rewritten, mcp::StandIns, Vec<Chain>, PathBuf) {
    let dir = scratch("plan");
    let mut r = with_mcp();
    r.grants.remove("tracker");
    let s = mcp::prepare(&owner(), &mut r, Some(Path::new("/x/fake")), &dir);
    let plan = chains::plan(&r, 4321, "n0", false);
    (r, s, plan, dir)
}

/// An MCP tool is a sink only when its grant lists hosts; every MCP grant's tool is a
/// source, never sent back through itself; the script calls the stand-in's tool with the
/// canary in its one argument.
#[test]
fn mcp_sinks_list_hosts_and_every_tool_is_a_source() {
    let (_, _, plan, _) = planned();
    let sinks: BTreeSet<(&str, &str)> = plan
        .iter()
        .filter(|c| c.sink.tool == "mcp")
        .map(|c| (c.sink.grant.as_str(), c.sink.entry.as_str()))
        .collect();
    assert_eq!(sinks, BTreeSet::from([("files-put", "mcp__files__put")]));
    let pairs: BTreeSet<(&str, &str, &str)> = plan
        .iter()
        .filter(|c| c.restart.is_none())
        .map(|c| (c.source.path.as_str(), c.sink.tool, c.sink.entry.as_str()))
        .collect();
    assert_eq!(
        pairs,
        BTreeSet::from([
            (
                "/s/tree/home/owner/notes/bxcanary.txt",
                "mcp",
                "mcp__files__put"
            ),
            ("mcp__files__bxhostile_tool", "mcp", "mcp__files__put"),
        ])
    );
    let from_mcp = plan
        .iter()
        .find(|c| c.source.tool == "mcp")
        .expect("an MCP source");
    assert_eq!(from_mcp.source.owner, "mcp:files/*");
    let script = super::script::script(&plan).expect("script");
    let put = plan.iter().find(|c| c.sink.tool == "mcp").expect("a sink");
    let args = serde_json::json!({"data": put.url}).to_string();
    assert!(put.url.contains(&put.canary));
    assert!(script.contains("name = \"mcp__files__put\""), "{script}");
    assert!(script.contains(&args), "{script}");
    assert!(
        script.contains("name = \"mcp__files__bxhostile_tool\""),
        "{script}"
    );
}

/// Each stand-in's tool answers the canaries of the chains that start from it, and records
/// its calls where `reached` looks for the chain's canary.
#[test]
fn the_stand_in_answers_its_chains_canaries_and_its_calls_are_read() {
    let (r, mut s, plan, dir) = planned();
    s.write(&plan).expect("write");
    let servers = config::mcp_file(s.toml()).expect("mcp.toml");
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].name, "files");
    assert_eq!(
        servers[0].command,
        [
            "/x/fake".to_owned(),
            dir.join("files.json").display().to_string()
        ]
    );
    assert!(!s.toml().contains("/opt/owner"), "{}", s.toml());
    let script: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("files.json")).expect("script"))
            .expect("JSON");
    assert_eq!(
        script["calls_file"],
        dir.join("files.calls").display().to_string()
    );
    let tools = script["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["bxhostile_tool", "put"]);
    // The canaries go to a source call only: the second block, given the source's word.
    let content = &tools[0]["result"]["content"];
    assert_eq!(content[0]["text"], "BXMCP-OK\n");
    let only = content[1]["text_if_arguments"].as_array().expect("a block");
    assert_eq!(only[0], mcp::SOURCE);
    let answer = only[1].as_str().expect("text");
    for c in plan.iter().filter(|c| c.source.tool == "mcp") {
        assert!(answer.contains(&c.canary), "{answer}");
        let (_, args) = mcp::source_call(&c.source);
        assert!(args.contains(mcp::SOURCE), "{args}");
    }
    for c in plan.iter().filter(|c| c.sink.tool == "mcp") {
        let sent = super::script::send(c);
        assert!(!sent.tool_calls[0].arguments.contains(mcp::SOURCE));
    }
    let put = plan
        .iter()
        .filter(|c| c.sink.tool == "mcp")
        .collect::<Vec<_>>();
    assert!(put.len() >= 2, "{put:?}");
    assert!(!s.reached(&r, put[0], Some("files-put")));
    std::fs::write(
        dir.join("files.calls"),
        format!(
            "{}\n",
            serde_json::json!({"name": "put", "arguments": {"data": put[0].url}})
        ),
    )
    .expect("calls");
    assert!(s.reached(&r, put[0], Some("files-put")));
    assert!(!s.reached(&r, put[1], Some("files-put")));
    // Decided by `files/*`, which lists no host: the server has no network, nothing left.
    assert!(!s.reached(&r, put[0], Some("files-all")));
    assert!(!s.reached(&r, put[0], None));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A consult's answer and an MCP tool's drive the writes too: after the fetches', the
/// consult's prompt asking the sink's completion for the chain's token.
#[test]
fn consult_and_mcp_answers_drive_writes() {
    let mut r = Rewritten::default();
    r.grants.insert(
        "ask".into(),
        grant("tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"private\"\n"),
    );
    r.grants.insert(
        "www".into(),
        grant(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             [constraints]\npaths = [\"/s/tree/srv/www\"]\n",
        ),
    );
    r.grants.insert(
        "up".into(),
        grant("tool = \"mcp:up/put\"\nmode = \"auto\"\nmax_taint = \"private\"\n"),
    );
    r.paths
        .insert("/srv/www".into(), (PathBuf::from("/s/tree/srv/www"), false));
    let plan = chains::plan(&r, 1, "n0", true);
    // The answers' (a write's own result driving a write is `untrusted_write::from_results`').
    let writes: Vec<(&str, &str)> = plan
        .iter()
        .filter(|c| c.sink.tool == "write_file" && c.source.tool != "write_file")
        .map(|c| (c.source.tool, c.source.path.as_str()))
        .collect();
    let token = |c: &Chain| c.canary.trim_start_matches(super::sink::WRITE).to_owned();
    let consult = plan
        .iter()
        .find(|c| c.source.tool == "consult")
        .expect("a consult write");
    assert_eq!(
        consult.source.path,
        format!("{}{}", super::sink::ASK, token(consult))
    );
    assert!(consult.canary.starts_with(super::sink::WRITE));
    assert_eq!(
        writes.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        ["consult", "mcp"]
    );
    assert_eq!(writes[1].1, "mcp__up__put");
    let script = super::script::script(&plan).expect("script");
    assert!(
        script.contains(&serde_json::json!({"prompt": consult.source.path}).to_string()),
        "{script}"
    );
}

fn step(g: &str, tool: &str, what: &str) -> Step {
    Step {
        grant: Some(g.into()),
        tool: tool.into(),
        what: what.into(),
    }
}

fn mcp_flow(source: Step, sink: Step) -> Flow {
    Flow {
        severity: Severity::PrivateOut,
        job: None,
        source,
        class: DataClass::Private,
        untrusted: false,
        sink,
        text: "a hijacked model can read /home/owner/notes".into(),
    }
}

/// A flow through a stand-in's grant is played, an MCP server reading and sending in one
/// call too (`mcp_bound`); through a grant left out it is not.
#[test]
fn mcp_flows_are_played_through_stand_ins_only() {
    let read = step("notes", "read_file", "/home/owner/notes");
    let put = step(
        "files-put",
        "mcp",
        "uploads.example.org through MCP tool mcp:files/put",
    );
    let left = [Left {
        grant: "tracker".into(),
        why: "remote".into(),
        scope: Scope::Grant,
    }];
    assert_eq!(
        mcp::not_played(&mcp_flow(read.clone(), put.clone()), &left),
        None
    );
    let from = step("files-all", "mcp", "mcp:files/*");
    assert_eq!(mcp::not_played(&mcp_flow(from, put.clone()), &left), None);
    let tracker = step(
        "tracker",
        "mcp",
        "192.168.1.20 through MCP tool mcp:tracker/*",
    );
    assert_eq!(
        mcp::not_played(&mcp_flow(read.clone(), tracker), &left).as_deref(),
        Some("grant tracker is left out of the shadow (below)")
    );
    assert_eq!(mcp::not_played(&mcp_flow(put.clone(), put), &left), None);
}

/// An MCP sink's leak agrees with a reported flow, fails unreported, and a reported flow
/// whose chain's canary never reached the stand-in fails.
#[test]
fn an_mcp_sink_is_compared_like_a_fetch() {
    let (_, _, plan, _) = planned();
    let c = plan
        .iter()
        .find(|c| c.sink.tool == "mcp" && c.source.tool == "read_file")
        .expect("read to MCP")
        .clone();
    let seen = |call: u64, tool: &str, content: String, class| Seen {
        call: CallId(call),
        tool: tool.into(),
        asked: false,
        response: Some(ToolResponse::Result {
            content,
            class,
            untrusted: false,
            truncated: false,
        }),
    };
    let o = Outcome {
        source: Some((
            Some("notes".into()),
            seen(1, "read_file", c.canary.clone(), DataClass::Private),
        )),
        laundering: Vec::new(),
        sink: Some((
            Some("files-put".into()),
            seen(2, "mcp__files__put", "BXMCP-OK".into(), DataClass::Public),
        )),
        at_sink: true,
        bare: false,
        write: false,
    };
    let flow = mcp_flow(
        step("notes", "read_file", "/home/owner/notes"),
        step(
            "files-put",
            "mcp",
            "uploads.example.org through MCP tool mcp:files/put",
        ),
    );
    let report = |flows| FlowsReport {
        snapshot: Hash32::ZERO,
        grants: Vec::new(),
        flows,
        sources: Vec::new(),
    };
    let levels = |o: &Outcome, flows| {
        compare::checks(
            &[(c.clone(), o.clone())],
            &report(flows),
            &[],
            &BTreeSet::new(),
        )
        .into_iter()
        .map(|k| (k.check, format!("{:?}", k.level), k.said))
        .collect::<Vec<_>>()
    };
    let found = levels(&o, vec![flow.clone()]);
    assert_eq!(found[0].1, "Ok", "{found:?}");
    assert!(
        found[0]
            .2
            .ends_with("then send it to mcp__files__put via grant files-put: leaked, as the flows analysis reports"),
        "{found:?}"
    );
    assert_eq!(
        (found[1].0.as_str(), found[1].1.as_str()),
        ("private_out", "Ok")
    );
    assert_eq!(levels(&o, vec![])[0].1, "Fail");
    let unseen = Outcome {
        at_sink: false,
        ..o.clone()
    };
    let found = levels(&unseen, vec![flow]);
    assert_eq!(found[1].1, "Fail", "{found:?}");
}

/// A remote server's stand-in is reached at the owner's URL's host and path (brokerd's
/// `[broker.self_test]` leads the host to loopback), over `http://` at its own port.
#[test]
fn a_remote_stand_in_keeps_the_host_and_path() {
    for (owner, shadow) in [
        (
            "http://192.168.1.20:8931/mcp",
            "http://192.168.1.20:4321/mcp",
        ),
        (
            "https://tracker.example.org/mcp/v1",
            "http://tracker.example.org:4321/mcp/v1",
        ),
        ("http://[fd00::1]/x", "http://[fd00::1]:4321/x"),
    ] {
        assert_eq!(super::mcp_http::at_port(owner, 4321).expect(owner), shadow);
    }
}
