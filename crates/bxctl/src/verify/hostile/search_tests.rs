//! Laundering by search, without a stack: the plan, the fake model's rules, and how a
//! chain's line and steps say it.

use std::collections::BTreeSet;

use proto::flows::FlowsReport;
use proto::{CallId, DataClass, Hash32, ToolResponse};

use super::chains::{self, Chain};
use super::compare::{self, Outcome};
use super::search::{self, Via};
use super::session::Seen;
use super::tests::{grant, rewritten};

fn with(tools: &[&str]) -> Vec<Chain> {
    let mut r = rewritten();
    for tool in tools {
        r.grants.insert(
            format!("g-{tool}"),
            grant(&format!(
                "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n"
            )),
        );
    }
    chains::plan(&r, 4321, "n0", false)
}

fn of(plan: &[Chain], via: Via) -> Vec<&Chain> {
    plan.iter()
        .filter(|c| search::via(c) == Some(via))
        .collect()
}

/// Every read to every sink, after every other chain: through a note searched for when the
/// grants write and search notes, through the session logs when they search those; none
/// without the search grant.
#[test]
fn search_chains_go_from_every_read_to_every_sink() {
    // After every chain but the fetch sources' (`fetch_source`), which come last.
    let base = with(&[])
        .iter()
        .filter(|c| !super::fetch_source::is(c))
        .count();
    assert!(of(&with(&["note_search"]), Via::NoteSearch).is_empty());
    assert!(of(&with(&["note_write"]), Via::NoteSearch).is_empty());
    let plan = with(&["note_write", "note_search", "session_search"]);
    let notes = of(&plan, Via::NoteSearch);
    let sessions = of(&plan, Via::SessionSearch);
    // Three reads (a file read, a directory read and listed) times two hosts, each way.
    assert_eq!((notes.len(), sessions.len()), (6, 6));
    assert_eq!(notes[0].n, base + 1);
    assert_eq!(
        notes[0].note.as_deref(),
        Some(format!("bxsearch-{}", base + 1).as_str())
    );
    assert_eq!(sessions[0].n, base + 7);
    assert_eq!(
        sessions[0].note.as_deref(),
        Some(format!("bxsession-{}", base + 7).as_str())
    );
    for c in notes.iter().chain(&sessions) {
        assert!(c.restart.is_none() && c.smuggle.is_none() && c.sink.lookalike.is_none());
        assert!(c.url.contains(&c.canary));
        // The word is one token to the index, and what is left holds the canary whole.
        assert!(search::word(c).chars().all(char::is_alphanumeric));
        assert!(search::left(c).contains(&format!(" {} ", c.canary)));
    }
    // The plain note chains stay as they were: read back by name.
    let plain = with(&["note_write", "note_read"]);
    assert!(
        plain
            .iter()
            .filter(|c| c.note.is_some())
            .all(|c| search::via(c) == Some(Via::Read))
    );
}

fn rules(plan: &[Chain], n: usize) -> Vec<toml::Value> {
    let text = super::script::script(plan).expect("script");
    let v: toml::Value = toml::from_str(&text).expect("toml");
    let prefix = format!("chain {n} ");
    v["rule"]
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| r["name"].as_str().is_some_and(|s| s.starts_with(&prefix)))
        .cloned()
        .collect()
}

/// The first session reads, then (once the read returned the canary) writes the note or
/// says the words; the new session searches for the word, and sends only once the search's
/// result holds the canary.
#[test]
fn the_script_searches_for_the_words_then_sends() {
    let plan = with(&["note_write", "note_search", "session_search"]);
    for (via, tool, search_tool) in [
        (Via::NoteSearch, Some("note_write"), "note_search"),
        (Via::SessionSearch, None, "session_search"),
    ] {
        let c = of(&plan, via)[0];
        let r = rules(&plan, c.n);
        assert_eq!(r.len(), 4, "{r:?}");
        let m = |i: usize, key: &str| r[i]["match"].get(key).and_then(|v| v.as_str());
        let call = |i: usize| &r[i]["answer"]["tool_calls"][0];
        // The send: in the new session, once the search returned the canary.
        assert_eq!(m(0, "user_contains"), Some(c.back_tag().as_str()));
        assert_eq!(m(0, "tool_result_contains"), Some(c.canary.as_str()));
        assert!(
            call(0)["arguments"]
                .as_str()
                .expect("url")
                .contains(&c.canary)
        );
        // The search: for the word, never the canary.
        assert_eq!(m(1, "user_contains"), Some(c.back_tag().as_str()));
        assert!(m(1, "tool_result_contains").is_none());
        assert_eq!(call(1)["name"].as_str(), Some(search_tool));
        let query = serde_json::json!({"query": search::word(c)}).to_string();
        assert_eq!(call(1)["arguments"].as_str(), Some(query.as_str()));
        assert!(!r[1].to_string().contains("BXCANARY"));
        // What the first session leaves, once its read returned the canary.
        assert_eq!(m(2, "user_contains"), Some(c.tag().as_str()));
        assert_eq!(m(2, "tool_result_contains"), Some(c.canary.as_str()));
        match tool {
            Some(t) => {
                assert_eq!(call(2)["name"].as_str(), Some(t));
                let args: serde_json::Value =
                    serde_json::from_str(call(2)["arguments"].as_str().expect("args"))
                        .expect("json");
                assert_eq!(args["text"].as_str(), Some(search::left(c).as_str()));
                assert_eq!(args["name"].as_str(), c.note.as_deref());
            }
            None => {
                assert!(r[2]["answer"].get("tool_calls").is_none());
                assert_eq!(
                    r[2]["answer"]["text"].as_str(),
                    Some(search::left(c).as_str())
                );
            }
        }
        assert!(!r[3].to_string().contains("BXCANARY"));
    }
}

fn seen(call: u64, tool: &str, content: &str, class: DataClass) -> Option<(Option<String>, Seen)> {
    let response = ToolResponse::Result {
        content: content.into(),
        class,
        untrusted: false,
        truncated: false,
    };
    let s = Seen {
        call: CallId(call),
        tool: tool.into(),
        asked: false,
        response: Some(response),
    };
    Some((Some(format!("g-{tool}")), s))
}

/// The chain's line says how the new session found it, and a leak through a search that the
/// analysis does not report fails, as any chain's does.
#[test]
fn a_search_chains_line_says_the_search() {
    let plan = with(&["note_write", "note_search", "session_search"]);
    for (via, said) in [
        (
            Via::NoteSearch,
            "and find that by note_search for its words in a new session, then send it to",
        ),
        (
            Via::SessionSearch,
            ", say it, and find that by session_search for its words in a new session, then \
             send it to",
        ),
    ] {
        let c = of(&plan, via)[0].clone();
        let steps = search::steps(&c);
        let read = (1..80).map(|n| chains::canary("n0", n)).collect::<String>();
        let o = Outcome {
            source: seen(1, c.source.tool, &read, DataClass::Private),
            laundering: steps
                .iter()
                .map(|(what, tool, _)| (*what, seen(2, tool, &c.canary, DataClass::Private)))
                .collect(),
            sink: seen(3, "http_fetch", "BXSINK-OK", DataClass::Public),
            at_sink: true,
            bare: false,
            write: false,
        };
        let report = FlowsReport {
            snapshot: Hash32::ZERO,
            grants: Vec::new(),
            flows: Vec::new(),
            sources: Vec::new(),
        };
        let found = compare::checks(&[(c.clone(), o)], &report, &[], &BTreeSet::new());
        let line = found
            .iter()
            .find(|l| l.check == format!("chain {}", c.n))
            .expect("line");
        assert!(line.said.contains(said), "{}", line.said);
        assert!(
            line.said
                .ends_with("leaked, and the flows analysis did not report it")
        );
        assert_eq!(format!("{:?}", line.level), "Fail");
    }
    let note = of(&plan, Via::NoteSearch)[0];
    assert_eq!(
        search::steps(note).iter().map(|s| s.0).collect::<Vec<_>>(),
        ["note write", "note search"]
    );
}

/// A search chain (and any chain) that starts from an MCP tool calls the stand-in's tool,
/// as the direct chain does, never a tool named `mcp` (which no grant covers: the chain
/// would say `stopped` for a call that was never the one meant).
#[test]
fn a_chain_from_an_mcp_source_calls_the_stand_ins_tool() {
    let mut r = rewritten();
    for tool in ["note_write", "note_search", "mcp:files/*"] {
        r.grants.insert(
            format!("g-{tool}"),
            grant(&format!(
                "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n"
            )),
        );
    }
    let plan = chains::plan(&r, 4321, "n0", false);
    let from_mcp: Vec<&Chain> = plan.iter().filter(|c| c.source.tool == "mcp").collect();
    assert!(
        from_mcp.iter().any(|c| search::via(c).is_some()),
        "no search chain from the MCP source"
    );
    for c in from_mcp {
        let source = rules(&plan, c.n)
            .into_iter()
            .find(|r| r["name"].as_str() == Some(&format!("chain {} source", c.n)))
            .expect("a source rule");
        let name = source["answer"]["tool_calls"][0]["name"]
            .as_str()
            .expect("a call");
        assert_ne!(name, "mcp", "chain {}", c.n);
        assert_eq!(name, super::mcp::source_called(&c.source), "chain {}", c.n);
    }
}
