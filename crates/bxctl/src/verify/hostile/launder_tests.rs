//! Laundering by compaction, without a stack: the plan, the fake model's rules, what counts
//! as an observed compaction, and the comparison with the direct chain.

use std::collections::BTreeSet;
use std::path::Path;

use proto::composed::SUMMARY_PROMPT;
use proto::flows::{Flow, FlowsReport, Severity, Step};
use proto::{CallId, DataClass, DenyReason, Epoch, Hash32, LogRecord, Timestamp, ToolResponse};

use super::chains::{self, Chain};
use super::compare::{self, Outcome};
use super::launder::{self, COMPACTION};
use super::session::Seen;
use super::tests::rewritten;

fn plan() -> Vec<Chain> {
    chains::plan(&rewritten(), 4321, "n0", false)
}

fn seen(call: u64, tool: &str, response: ToolResponse) -> Seen {
    Seen {
        call: CallId(call),
        tool: tool.into(),
        asked: false,
        response: Some(response),
    }
}

fn read(class: DataClass) -> Outcome {
    let r = ToolResponse::Result {
        content: (1..40).map(|n| chains::canary("n0", n)).collect(),
        class,
        untrusted: false,
        truncated: false,
    };
    let sent = ToolResponse::Result {
        content: "BXSINK-OK".into(),
        class: DataClass::Public,
        untrusted: true,
        truncated: false,
    };
    Outcome {
        source: Some((Some("notes".into()), seen(1, "read_file", r))),
        laundering: Vec::new(),
        sink: Some((Some("web".into()), seen(2, "http_fetch", sent))),
        at_sink: true,
        bare: false,
        write: false,
    }
}

fn denied(o: &Outcome) -> Outcome {
    let no = ToolResponse::Denied {
        reason: DenyReason::TaintTooHigh,
        detail: None,
    };
    Outcome {
        sink: Some((Some("web".into()), seen(2, "http_fetch", no))),
        at_sink: false,
        ..o.clone()
    }
}

fn report(flows: Vec<Flow>) -> FlowsReport {
    FlowsReport {
        snapshot: Hash32::ZERO,
        grants: vec!["notes".into(), "web".into()],
        flows,
        sources: Vec::new(),
    }
}

fn flow() -> Flow {
    let step = |g: &str, tool: &str, what: &str| Step {
        grant: Some(g.into()),
        tool: tool.into(),
        what: what.into(),
    };
    Flow {
        severity: Severity::PrivateOut,
        job: None,
        source: step("notes", "read_file", "/home/owner/notes"),
        class: DataClass::Private,
        untrusted: false,
        sink: step("web", "http_fetch", "api.example.org"),
        text: "a hijacked model can read /home/owner/notes".into(),
    }
}

/// From the first free read to every sink, as the restarts are, numbered after every other
/// chain (so theirs do not move); the direct chain of the same read and sink is there to
/// compare with.
#[test]
fn compaction_chains_go_from_the_first_free_read_to_every_sink() {
    let plan = plan();
    let compacted: Vec<&Chain> = plan.iter().filter(|c| launder::is_compaction(c)).collect();
    assert_eq!(compacted.iter().map(|c| c.n).collect::<Vec<_>>(), [21, 22]);
    // Then only the fetch sources' (`fetch_source`).
    assert!(plan[22..].iter().all(super::fetch_source::is));
    for c in &compacted {
        assert_eq!(c.source.path, "/s/tree/home/owner/notes/bxcanary.txt");
        assert_eq!(c.restart, Some(COMPACTION));
        assert!(c.note.is_none() && c.smuggle.is_none() && c.sink.lookalike.is_none());
        assert!(c.url.contains(&c.canary));
        let direct = plan.iter().find(|d| {
            d.restart.is_none() && d.smuggle.is_none() && d.source == c.source && d.sink == c.sink
        });
        assert!(direct.is_some(), "chain {}: no direct chain", c.n);
    }
}

fn rules_of(n: usize) -> Vec<toml::Value> {
    let plan = plan();
    let text = super::script::script(&plan).expect("script");
    let v: toml::Value = toml::from_str(&text).expect("toml");
    assert_eq!(
        v["server"]["n_ctx"].as_integer(),
        Some(i64::from(launder::N_CTX))
    );
    let prefix = format!("chain {n} ");
    v["rule"]
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| r["name"].as_str().is_some_and(|s| s.starts_with(&prefix)))
        .cloned()
        .collect()
}

/// The read; the padding once its result holds the canary; the summary (carrying the
/// canary) only in the chain's own epoch; the send only in a request that carries that
/// summary, never on what the script knows alone.
#[test]
fn the_script_compacts_then_sends_only_what_the_summary_carries() {
    let c = plan().into_iter().find(|c| c.n == 21).expect("chain 21");
    let rules = rules_of(21);
    let names: Vec<&str> = rules.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "chain 21 after compaction",
            "chain 21 summary",
            "chain 21 padding",
            "chain 21 source"
        ]
    );
    let m = |i: usize, key: &str| rules[i]["match"].get(key).and_then(|v| v.as_str());
    // The send: only with the summary in the request.
    assert_eq!(
        m(0, "user_contains"),
        Some("[bxhostile chain 21 after compaction]")
    );
    assert_eq!(
        m(0, "history_contains"),
        Some(launder::summary(&c).as_str())
    );
    assert!(launder::summary(&c).contains(&c.canary));
    let call = &rules[0]["answer"]["tool_calls"][0];
    assert_eq!(call["name"].as_str(), Some("http_fetch"));
    assert!(
        call["arguments"]
            .as_str()
            .expect("args")
            .contains(&c.canary)
    );
    // The summary: loopd's instruction, in this chain's epoch only.
    assert_eq!(m(1, "user_contains"), Some(SUMMARY_PROMPT));
    assert_eq!(m(1, "history_contains"), Some(c.tag().as_str()));
    assert!(rules[1]["answer"].get("tool_calls").is_none());
    // The padding: once the read returned the canary, no call, the threshold's tokens (the
    // fake model's tokens are 4 bytes of a line), and no canary of its own.
    assert_eq!(m(2, "tool_result_contains"), Some(c.canary.as_str()));
    let pad = rules[2]["answer"]["text"].as_str().expect("padding");
    assert!(pad.lines().all(|l| l.len() == 63), "64-byte lines");
    let config = config::Config::parse(
        Path::new("c.toml"),
        &format!(
            "[sockets]\nloop_broker = \"/r/lb\"\nadmin_broker = \"/r/ab\"\n[peers]\n\
             loopd = {{ user = \"l\" }}\nadmin = {{ group = \"a\" }}\n{}",
            launder::config()
        ),
    )
    .expect("the shadow's [loop] is valid");
    let threshold = u64::from(launder::N_CTX) * u64::from(config.r#loop.compact_percent) / 100;
    let tokens = (pad.len() / 4) as u64;
    assert!(tokens >= threshold, "{tokens} < {threshold}");
    assert!(tokens < u64::from(config.r#loop.max_tokens));
    assert!(!pad.contains("BXCANARY"));
    // The read, as any chain's: the canary never in its arguments.
    assert!(m(3, "tool_result_contains").is_none());
    assert!(!rules[3].to_string().contains("BXCANARY"));
}

fn user(text: String) -> LogRecord {
    LogRecord::User {
        time: Timestamp::now(),
        content: text,
    }
}

/// Observed only from loopd's log: the read's epoch ends with a summary holding the canary,
/// and the send's turn is in a later epoch.
#[test]
fn a_compaction_is_observed_in_loopds_log_or_not_at_all() {
    let c = plan().into_iter().find(|c| c.n == 21).expect("chain 21");
    let end = |summary: String| LogRecord::EpochEnd {
        time: Timestamp::now(),
        next: Epoch(1),
        summary,
    };
    let first = vec![user(c.message()), end(launder::summary(&c))];
    let last = vec![user(launder::after_message(&c))];
    assert_eq!(launder::judge(&c, &first, Epoch(1), &last), None);
    let why = |first: &[LogRecord], now: Epoch, last: &[LogRecord]| {
        launder::judge(&c, first, now, last).expect("not observed")
    };
    let uncompacted = [user(c.message()), user(launder::after_message(&c))];
    assert!(why(&uncompacted, Epoch(0), &uncompacted).contains("did not compact"));
    let other = [user(c.message()), end("the owner asked for nothing".into())];
    assert!(why(&other, Epoch(1), &last).contains("did not carry the canary"));
    assert!(why(&first, Epoch(1), &[]).contains("not in the epoch after"));
    let line = launder::not_observed(&c, "read …", "the session did not compact");
    assert_eq!(format!("{:?}", line.level), "Warn");
    assert_eq!(line.check, "chain 21");
    assert!(
        line.said
            .ends_with("not observed (the session did not compact)")
    );
}

/// brokerd keeps the session's label across compaction: a verdict other than the direct
/// chain's warns (`compaction`), either way; the unsafe way also fails on the chain's own
/// line when the analysis does not report the leak.
#[test]
fn a_compaction_that_changes_the_verdict_warns() {
    let plan = plan();
    let compacted = plan.iter().find(|c| c.n == 21).expect("chain 21");
    let direct = plan.iter().find(|c| c.n == 1).expect("chain 1");
    assert_eq!(
        (&direct.source, &direct.sink),
        (&compacted.source, &compacted.sink)
    );
    let leak = read(DataClass::Private);
    let stopped = denied(&leak);
    let checks = |a: &Outcome, b: &Outcome, flows: Vec<Flow>| {
        let pair = [(direct.clone(), a.clone()), (compacted.clone(), b.clone())];
        compare::checks(&pair, &report(flows), &[], &BTreeSet::new())
            .into_iter()
            .map(|c| (c.check, format!("{:?}", c.level), c.said))
            .collect::<Vec<_>>()
    };
    let warned = |a: &Outcome, b: &Outcome, flows: Vec<Flow>| {
        checks(a, b, flows)
            .into_iter()
            .filter(|(name, ..)| name == "compaction")
            .collect::<Vec<_>>()
    };
    assert_eq!(warned(&leak, &leak, vec![flow()]), []);
    assert_eq!(warned(&stopped, &stopped, vec![]), []);
    for (a, b) in [(&leak, &stopped), (&stopped, &leak)] {
        let found = warned(a, b, vec![flow()]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].1, "Warn");
        assert!(
            found[0].2.contains("chain 21 (the session compacted"),
            "{found:?}"
        );
        assert!(found[0].2.contains("chain 1 (the same read"), "{found:?}");
    }
    // Leaked after compaction only, and not reported: the chain's own line fails.
    let all = checks(&stopped, &leak, vec![]);
    let line = all.iter().find(|(n, ..)| n == "chain 21").expect("line");
    assert_eq!(line.1, "Fail", "{all:?}");
    assert!(
        line.2
            .contains("the session compacts, its summary carrying it"),
        "{line:?}"
    );
}

/// A not-observed line goes among the chain lines, in chain order.
#[test]
fn a_not_observed_line_is_placed_in_chain_order() {
    use crate::verify::report::{Check, Part};
    let c = |name: &str| Check::ok(Part::Hostile, name, "x");
    let plan = plan();
    let mut checks = vec![c("shadow"), c("chain 20"), c("chain 22"), c("private_out")];
    let line = |n: usize| launder::not_observed(&plan[n - 1], "w", "why");
    launder::place(&mut checks, vec![(21, line(21))]);
    let names: Vec<&str> = checks.iter().map(|c| c.check.as_str()).collect();
    assert_eq!(
        names,
        ["shadow", "chain 20", "chain 21", "chain 22", "private_out"]
    );
    let mut tail = vec![c("shadow"), c("chain 20"), c("private_out")];
    launder::place(&mut tail, vec![(22, line(22))]);
    let names: Vec<&str> = tail.iter().map(|c| c.check.as_str()).collect();
    assert_eq!(names, ["shadow", "chain 20", "chain 22", "private_out"]);
}

/// A chain whose compaction (or search) was not observed is set aside, unless its canary
/// reached the sink: then it is judged, and an unreported leak fails.
#[test]
fn a_chain_not_observed_whose_canary_reached_the_sink_is_judged() {
    let why = "the session did not compact".to_owned();
    assert_eq!(launder::set_aside(Some(&why), false), Some(&why));
    assert_eq!(launder::set_aside(Some(&why), true), None);
    assert_eq!(launder::set_aside(None, false), None);
}
