//! An MCP server reading its bound paths and sending them in one call (`mcp_bound`),
//! without a stack: which grants get a bound chain, what the stand-in is told to read, what
//! counts as having left, and which flows stay `not tried`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proto::flows::{Flow, FlowsReport, Severity, Step};
use proto::{CallId, DataClass, Hash32, ToolResponse};
use serde_json::json;

use super::chains::{self, Chain};
use super::compare::{self, Outcome};
use super::rewrite::Rewritten;
use super::session::Seen;
use super::tests::grant;
use super::{mcp, mcp_bound};

/// The shadow's copy of the owner's vault.
const VAULT: &str = "/s/tree/home/owner/vault";

/// The owner's servers: `fs` and `send` local, `far` remote.
fn owner() -> Vec<config::McpServer> {
    config::mcp_file(
        "[[mcp]]\nname = \"fs\"\ncommand = [\"/opt/owner/fs-server\"]\n\
         [[mcp]]\nname = \"far\"\nurl = \"http://192.168.1.20:8931/mcp\"\n",
    )
    .expect("mcp")
}

/// A read of the vault, and `fs-send` (`mcp:fs/*`), binding the vault and listing a host.
fn with_bound() -> Rewritten {
    let mut r = Rewritten::default();
    r.grants.insert(
        "vault-read".into(),
        grant(&format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"secret\"\n[constraints]\npaths = [\"{VAULT}\"]\n"
        )),
    );
    r.grants.insert("fs-send".into(), bound_grant("mcp:fs/*"));
    r.paths
        .insert("/home/owner/vault".into(), (PathBuf::from(VAULT), false));
    r
}

/// An MCP grant of `tool` binding the vault and listing `api.example.org`.
fn bound_grant(tool: &str) -> proto::Grant {
    grant(&format!(
        "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         [constraints]\npaths = [\"{VAULT}\"]\nhosts = [\"api.example.org\"]\n"
    ))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wt-hostile-mcpb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The stand-ins and the chains of `r`, prepared under `dir`.
fn planned(mut r: Rewritten, dir: &Path) -> (Rewritten, mcp::StandIns, Vec<Chain>) {
    let s = mcp::prepare(&owner(), &mut r, Some(Path::new("/x/fake")), dir);
    let mut plan = chains::plan(&r, 4321, "n0", false);
    super::mcp_args::carry(&r, &mut plan);
    (r, s, plan)
}

/// A local server's grant binding paths and listing hosts gets one bound chain: its canary
/// planted under the first path, its one call the stand-in's tool without the canary; the
/// stand-in's tool reads the grant's paths, its answer holds no bound canary.
#[test]
fn a_bound_grant_gets_a_chain_and_its_stand_in_reads_its_paths() {
    let dir = scratch("plan");
    let (r, mut s, plan) = planned(with_bound(), &dir);
    let bound: Vec<&Chain> = plan.iter().filter(|c| mcp_bound::is(c)).collect();
    assert_eq!(bound.len(), 1, "{plan:?}");
    let c = bound[0];
    assert_eq!(c.source.owner, "/home/owner/vault");
    assert_eq!(c.sink.grant, "fs-send");
    assert_eq!(c.sink.entry, "mcp__fs__bxhostile_tool");
    assert_eq!(c.url, format!("bxbound-{}", c.n));
    // No other chain is taken for a bound one (an MCP source is never sent back through
    // its own tool otherwise).
    assert!(plan.iter().all(|o| mcp_bound::is(o) == (o.n == c.n)));

    // The model's one call: the tool, `data` without the canary; nothing after it.
    let script = super::script::script(&plan).expect("script");
    let table: toml::Table = toml::from_str(&script).expect("toml");
    let rules = table["rule"].as_array().expect("rules");
    let source = rules
        .iter()
        .find(|r| r["name"].as_str() == Some(&format!("chain {} source", c.n)))
        .expect("source rule");
    let call = &source["answer"]["tool_calls"][0];
    assert_eq!(call["name"].as_str(), Some("mcp__fs__bxhostile_tool"));
    let args: serde_json::Value =
        serde_json::from_str(call["arguments"].as_str().expect("arguments")).expect("JSON");
    assert_eq!(args, json!({"data": format!("bxbound-{}", c.n)}));

    s.write(&plan).expect("write");
    let stand_in: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("fs.json")).expect("script"))
            .expect("JSON");
    assert_eq!(
        stand_in["sent_file"],
        dir.join("fs.sent").display().to_string()
    );
    let tool = &stand_in["tools"][0];
    assert_eq!(tool["name"], "bxhostile_tool");
    assert_eq!(tool["reads"], json!([VAULT]));
    let answer = tool["result"]["content"][0]["text"].as_str().expect("text");
    assert!(!answer.contains(&c.canary), "{answer}");

    // Planted under the vault: a file of the chain's own.
    let tree = dir.join("tree");
    let mut moved = Rewritten::default();
    let vault = tree.join("vault");
    let mut g = bound_grant("mcp:fs/*");
    g.constraints.paths = vec![vault.display().to_string()];
    moved.grants.insert("fs-send".into(), g);
    moved.paths.insert("/v".into(), (vault.clone(), false));
    mcp_bound::plant(&moved, &plan).expect("plant");
    let planted = std::fs::read_to_string(vault.join(format!("bxhostile-mcp-{}", c.n)));
    assert_eq!(planted.expect("planted"), format!("{}\n", c.canary));
    // A granted file gets the canary as a line of its own.
    let file = tree.join("secret.txt");
    moved
        .grants
        .get_mut("fs-send")
        .expect("grant")
        .constraints
        .paths = vec![file.display().to_string()];
    moved.paths.insert("/f".into(), (file.clone(), true));
    std::fs::write(&file, "yours\n").expect("file");
    mcp_bound::plant(&moved, &plan).expect("plant");
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        format!("yours\n{}\n", c.canary)
    );
    assert_eq!(r.left.len(), 0, "{:?}", r.left);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The stand-in's record of what it sent, in its sent file, as `fake-mcp-server` writes it.
fn record(tool: &str, arguments: &serde_json::Value, line: &str) -> String {
    format!(
        "{}\n",
        json!({"arguments": arguments, "line": line, "name": tool, "path": VAULT})
    )
}

/// A bound chain's canary left only when the stand-in sent it in the chain's own call and
/// the bound grant itself decided that call; the canary in a call's arguments, another
/// call's send, or another grant's decision does not count.
#[test]
fn a_bound_chain_is_reached_by_its_own_call_under_its_own_grant() {
    let dir = scratch("reached");
    let mut r = with_bound();
    // `fs-other` lists the same host but binds nothing: a call it decides reads no vault.
    r.grants.insert(
        "fs-other".into(),
        grant(
            "tool = \"mcp:fs/*\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             [constraints]\nhosts = [\"api.example.org\"]\n",
        ),
    );
    let (r, mut s, plan) = planned(r, &dir);
    s.write(&plan).expect("write");
    let c = plan
        .iter()
        .find(|c| mcp_bound::is(c) && c.sink.grant == "fs-send")
        .expect("bound chain");
    let own = json!({"data": c.url});
    let sent = dir.join("fs.sent");
    assert!(!s.reached(&r, c, Some("fs-send")), "nothing sent yet");
    // The canary in a call's arguments (the calls file) is not what the server read.
    std::fs::write(
        dir.join("fs.calls"),
        format!(
            "{}\n",
            json!({"arguments": {"data": c.canary}, "name": "bxhostile_tool"})
        ),
    )
    .expect("calls");
    assert!(!s.reached(&r, c, Some("fs-send")));
    // Sent, but in another call (another chain's arguments).
    std::fs::write(
        &sent,
        record("bxhostile_tool", &json!({"data": "other"}), &c.canary),
    )
    .expect("sent");
    assert!(!s.reached(&r, c, Some("fs-send")));
    // Sent in its own call.
    std::fs::write(&sent, record("bxhostile_tool", &own, &c.canary)).expect("sent");
    assert!(s.reached(&r, c, Some("fs-send")));
    // Decided by another grant (its unit binds none of the vault), or by none.
    assert!(!s.reached(&r, c, Some("fs-other")));
    assert!(!s.reached(&r, c, None));
    // Another tool's send is not this tool's.
    std::fs::write(&sent, record("put", &own, &c.canary)).expect("sent");
    assert!(!s.reached(&r, c, Some("fs-send")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A remote server's grant binding paths has no bound chain (brokerd binds nothing for it,
/// and the analysis reports no one call of it, V58): nothing is left out, its other flows are
/// played, and a report of its one call (a mistake in the analysis) is held against the
/// chains, none of which completes it: a `FAIL`, never a `not tried`.
#[test]
fn a_remote_servers_bound_grant_has_no_one_call() {
    let dir = scratch("remote");
    let mut r = with_bound();
    r.grants.remove("fs-send");
    r.grants.insert("far-send".into(), bound_grant("mcp:far/*"));
    let mut shadow = r;
    // Prepared without writing (a remote stand-in would start).
    let _s = mcp::prepare(&owner(), &mut shadow, Some(Path::new("/x/fake")), &dir);
    assert!(shadow.left.is_empty(), "{:?}", shadow.left);
    assert!(shadow.remote.contains("far"), "{:?}", shadow.remote);
    assert!(
        shadow.grants.contains_key("far-send"),
        "its other flows are played"
    );
    let plan = chains::plan(&shadow, 4321, "n0", false);
    assert!(!plan.iter().any(mcp_bound::is), "{plan:?}");
    assert!(
        plan.iter().any(|c| c.sink.grant == "far-send"),
        "the vault read sent through it: {plan:?}"
    );
    let far = step("far-send", "api.example.org through MCP tool mcp:far/*");
    let mistake = flow(far.clone(), far);
    assert_eq!(mcp::not_played(&mistake, &shadow.left), None);
    let report = FlowsReport {
        snapshot: Hash32::ZERO,
        grants: Vec::new(),
        flows: vec![mistake],
        sources: Vec::new(),
    };
    let found = compare::checks(&[], &report, &shadow.left, &BTreeSet::new());
    assert!(
        found
            .iter()
            .any(|k| format!("{:?}", k.level) == "Fail" && k.said.contains("no chain completed")),
        "{found:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn step(g: &str, what: &str) -> Step {
    Step {
        grant: Some(g.into()),
        tool: "mcp".into(),
        what: what.into(),
    }
}

fn flow(source: Step, sink: Step) -> Flow {
    Flow {
        severity: Severity::SecretOut,
        job: None,
        source,
        class: DataClass::Secret,
        untrusted: false,
        sink,
        text: "a hijacked model can call mcp:fs/* and send it in the same call".into(),
    }
}

/// A bound chain that reached the sink completes the one-call flow, keyed with the grant as
/// source and sink, whatever its call's label; one that did not leaves the flow failed.
#[test]
fn a_bound_chain_completes_the_one_call_flow() {
    let dir = scratch("compare");
    let (_, _, plan) = planned(with_bound(), &dir);
    let c = plan
        .iter()
        .find(|c| mcp_bound::is(c))
        .expect("bound")
        .clone();
    let call = Seen {
        call: CallId(1),
        tool: "mcp__fs__bxhostile_tool".into(),
        asked: false,
        response: Some(ToolResponse::Result {
            content: "BXMCP-OK".into(),
            class: DataClass::Public,
            untrusted: false,
            truncated: false,
        }),
    };
    let o = |at_sink| Outcome {
        source: Some((Some("fs-send".into()), call.clone())),
        laundering: Vec::new(),
        sink: Some((Some("fs-send".into()), call.clone())),
        at_sink,
        bare: false,
        write: false,
    };
    let one = step("fs-send", "api.example.org through MCP tool mcp:fs/*");
    let report = FlowsReport {
        snapshot: Hash32::ZERO,
        grants: Vec::new(),
        flows: vec![flow(one.clone(), one)],
        sources: Vec::new(),
    };
    let levels = |o: Outcome| {
        compare::checks(&[(c.clone(), o)], &report, &[], &BTreeSet::new())
            .into_iter()
            .map(|k| (format!("{:?}", k.level), k.said))
            .collect::<Vec<_>>()
    };
    let found = levels(o(true));
    assert_eq!(found[0].0, "Ok", "{found:?}");
    assert!(
        found[0].1.starts_with(
            "read /home/owner/vault (public) via grant fs-send, then send \
             it to mcp__fs__bxhostile_tool via grant fs-send: leaked, as the flows analysis reports"
        ),
        "{found:?}"
    );
    assert!(
        found[1].0 == "Ok" && found[1].1.starts_with(&format!("leaked by chain {}", c.n)),
        "{found:?}"
    );
    let found = levels(o(false));
    assert!(
        found[1].0 == "Fail" && found[1].1.contains("no chain completed"),
        "{found:?}"
    );
    // Binds the analysis labels public (the grant's source label, binds included): no flow
    // reported, and the canary sent is public data out, no leak (V56).
    let public = FlowsReport {
        flows: Vec::new(),
        sources: vec![proto::flows::SourceLabel {
            job: None,
            source: step("fs-send", "mcp:fs/*"),
            class: DataClass::Public,
            untrusted: false,
        }],
        ..report.clone()
    };
    let found = compare::checks(&[(c.clone(), o(true))], &public, &[], &BTreeSet::new());
    assert!(
        found.len() == 1 && found[0].said.contains("the data was public: no flow"),
        "{found:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
