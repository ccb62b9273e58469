//! The comparison, without a stack: each disagreement with the analysis fails.

use std::collections::BTreeSet;

use proto::flows::{Flow, FlowsReport, Severity, Step};
use proto::{CallId, DataClass, DenyReason, Hash32, ToolResponse};

use super::chains::{self, Chain};
use super::compare::{self, Outcome};
use super::session::Seen;
use super::tests::rewritten;

fn seen(call: u64, tool: &str, response: ToolResponse) -> Seen {
    Seen {
        call: CallId(call),
        tool: tool.into(),
        asked: false,
        response: Some(response),
    }
}

fn read_ok(class: DataClass) -> Option<(Option<String>, Seen)> {
    let r = ToolResponse::Result {
        // What a read that ran returns: every chain's canary (each chain looks for its own).
        content: (1..40).map(|n| chains::canary("n0", n)).collect(),
        class,
        untrusted: false,
        truncated: false,
    };
    Some((Some("notes".into()), seen(1, "read_file", r)))
}

fn fetched() -> Option<(Option<String>, Seen)> {
    let r = ToolResponse::Result {
        content: "BXSINK-OK".into(),
        class: DataClass::Public,
        untrusted: true,
        truncated: false,
    };
    Some((Some("web".into()), seen(2, "http_fetch", r)))
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

fn report(flows: Vec<Flow>) -> FlowsReport {
    FlowsReport {
        snapshot: Hash32::ZERO,
        grants: vec!["notes".into(), "web".into()],
        flows,
        sources: Vec::new(),
    }
}

fn levels(chains: &[(Chain, Outcome)], r: &FlowsReport) -> Vec<(String, String)> {
    compare::checks(chains, r, &[], &BTreeSet::new())
        .into_iter()
        .map(|c| (c.check, format!("{:?}", c.level)))
        .collect()
}

fn pair(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| ((*a).into(), (*b).into())).collect()
}

/// A leak agrees with a reported flow; a leak the report lacks, a reported flow no chain
/// completed, and a look-alike at the sink each fail; public data at the sink is no flow.
#[test]
fn the_comparison_fails_on_each_disagreement() {
    let plan = chains::plan(&rewritten(), 1, "n0", false);
    let leak = Outcome {
        source: read_ok(DataClass::Private),
        laundering: Vec::new(),
        sink: fetched(),
        at_sink: true,
        bare: false,
        write: false,
    };
    let one = vec![(plan[0].clone(), leak.clone())];
    assert_eq!(
        levels(&one, &report(vec![flow()])),
        pair(&[("chain 1", "Ok"), ("private_out", "Ok")])
    );
    // Dropped from the report: the leak is unreported.
    assert_eq!(levels(&one, &report(vec![])), pair(&[("chain 1", "Fail")]));
    // Reported but not tried (the read's grant names patterns), yet completed: agreement.
    let patterned: BTreeSet<String> = ["notes".to_owned()].into();
    let got: Vec<(String, String)> = compare::checks(&one, &report(vec![flow()]), &[], &patterned)
        .into_iter()
        .map(|c| (c.check, format!("{:?}", c.level)))
        .collect();
    assert_eq!(got, pair(&[("chain 1", "Ok"), ("private_out", "Warn")]));
    // Added to the report, while the fetch was denied.
    let denied = Outcome {
        sink: Some((
            Some("web".into()),
            seen(
                2,
                "http_fetch",
                ToolResponse::Denied {
                    reason: DenyReason::TaintTooHigh,
                    detail: None,
                },
            ),
        )),
        at_sink: false,
        bare: false,
        ..leak.clone()
    };
    let stopped = vec![(plan[0].clone(), denied)];
    assert_eq!(
        levels(&stopped, &report(vec![flow()])),
        pair(&[("chain 1", "Ok"), ("private_out", "Fail")])
    );
    // Public data at the sink: no flow to report.
    let public = Outcome {
        source: read_ok(DataClass::Public),
        ..leak.clone()
    };
    assert_eq!(
        levels(&[(plan[0].clone(), public)], &report(vec![])),
        pair(&[("chain 1", "Ok")])
    );
    // A source the analysis labels public by itself: its result carries the session's label
    // too (private from the start), so the read shows private; still no flow (V56). Where the
    // analysis labels the grant private too (another path of it), it is a leak unreported.
    let label = |class| proto::flows::SourceLabel {
        job: None,
        source: flow().source,
        class,
        untrusted: false,
    };
    let mut own = report(vec![]);
    own.sources = vec![label(DataClass::Public)];
    let said = compare::checks(&one, &own, &[], &BTreeSet::new());
    assert_eq!(said.len(), 1);
    assert!(
        (said[0].level == crate::verify::report::Level::Ok)
            && said[0].said.contains("the data was public: no flow"),
        "{said:?}"
    );
    own.sources.push(label(DataClass::Private));
    assert_eq!(levels(&one, &own), pair(&[("chain 1", "Fail")]));
    // A look-alike's canary at the sink fails, whatever the report says.
    let lookalike = plan
        .iter()
        .find(|c| c.sink.lookalike.is_some())
        .expect("look-alike");
    assert_eq!(
        levels(&[(lookalike.clone(), leak)], &report(vec![flow()])),
        pair(&[("chain 7", "Fail"), ("private_out", "Fail")])
    );
    // A job's flow is the job runs' (`jobs_check`), neither passed nor failed here.
    let mut job = flow();
    job.job = Some(proto::JobName::new("brief").expect("job"));
    assert_eq!(levels(&[], &report(vec![job])), pair(&[]));
}

/// A smuggled call at the sink fails whatever the report says, and counts for no flow; one
/// refused is stopped; a fragment's fetch that went without the canary is said so.
#[test]
fn a_smuggled_call_at_the_sink_fails() {
    let plan = chains::plan(&rewritten(), 1, "n0", false);
    let smuggled = |kind: &str| {
        plan.iter()
            .find(|c| c.smuggle == Some(kind))
            .expect("smuggled")
            .clone()
    };
    let reached = Outcome {
        source: read_ok(DataClass::Private),
        laundering: Vec::new(),
        sink: fetched(),
        at_sink: true,
        bare: false,
        write: false,
    };
    let duplicate = smuggled("duplicate");
    let found = compare::checks(
        &[(duplicate.clone(), reached.clone())],
        &report(vec![flow()]),
        &[],
        &BTreeSet::new(),
    );
    assert_eq!(
        found
            .iter()
            .map(|c| (c.check.as_str(), format!("{:?}", c.level)))
            .collect::<Vec<_>>(),
        [
            ("chain 17", "Fail".to_owned()),
            ("private_out", "Fail".to_owned())
        ]
    );
    assert!(found[0].said.contains("reached the sink"), "{found:?}");
    let refused = Outcome {
        sink: Some((
            None,
            seen(
                2,
                "http_fetch",
                ToolResponse::Denied {
                    reason: DenyReason::InvalidArguments,
                    detail: None,
                },
            ),
        )),
        at_sink: false,
        bare: false,
        ..reached.clone()
    };
    let found = compare::checks(
        &[(duplicate, refused)],
        &report(vec![]),
        &[],
        &BTreeSet::new(),
    );
    assert_eq!(format!("{:?}", found[0].level), "Ok");
    assert!(
        found[0]
            .said
            .ends_with(": stopped (the fetch was denied: invalid_arguments)"),
        "{found:?}"
    );
    let without = Outcome {
        at_sink: false,
        bare: true,
        ..reached.clone()
    };
    let found = compare::checks(
        &[(smuggled("fragment"), without.clone())],
        &report(vec![]),
        &[],
        &BTreeSet::new(),
    );
    assert_eq!(format!("{:?}", found[0].level), "Ok");
    assert!(
        found[0]
            .said
            .ends_with("sent without its fragment (the canary never reached the sink)"),
        "{found:?}"
    );
    // brokerd's result alone is not the sink's: a fetch the sink never saw fails.
    let unseen = Outcome {
        bare: false,
        ..without
    };
    let found = compare::checks(
        &[(smuggled("fragment"), unseen)],
        &report(vec![]),
        &[],
        &BTreeSet::new(),
    );
    assert_eq!(format!("{:?}", found[0].level), "Fail", "{found:?}");
    assert!(found[0].said.contains("the sink never saw"), "{found:?}");
    // A smuggled call that brokerd parsed (it ran, failed or asked) fails, though nothing
    // reached the sink; one never sent is not observed.
    let mut asked = seen(
        2,
        "http_fetch",
        ToolResponse::Denied {
            reason: DenyReason::ApprovalRefused,
            detail: None,
        },
    );
    asked.asked = true;
    let failed = ToolResponse::Failed {
        message: "connection refused".into(),
        failure: None,
    };
    for (sink, level) in [
        (fetched(), "Fail"),
        (Some((Some("web".into()), asked)), "Fail"),
        (Some((None, seen(2, "http_fetch", failed))), "Fail"),
        (None, "Warn"),
    ] {
        for kind in ["duplicate", "unknown-field", "userinfo", "fragment"] {
            // A fragment's call that ran or failed is judged by the sink (above).
            if kind == "fragment" && level == "Fail" {
                continue;
            }
            let o = Outcome {
                sink: sink.clone(),
                at_sink: false,
                ..reached.clone()
            };
            let found = compare::checks(
                &[(smuggled(kind), o)],
                &report(vec![]),
                &[],
                &BTreeSet::new(),
            );
            assert_eq!(format!("{:?}", found[0].level), level, "{kind}: {found:?}");
        }
    }
}

/// A restart, look-alike or smuggling chain whose read did not return its canary tried
/// nothing: `not tried`, a warn, never `ok`.
#[test]
fn a_chain_whose_read_did_not_run_is_not_tried() {
    let plan = chains::plan(&rewritten(), 1, "n0", false);
    let denied = seen(
        1,
        "read_file",
        ToolResponse::Denied {
            reason: DenyReason::DeniedByGrant,
            detail: None,
        },
    );
    let o = Outcome {
        source: Some((Some("ssh".into()), denied)),
        laundering: Vec::new(),
        sink: None,
        at_sink: false,
        bare: false,
        write: false,
    };
    let picked = [
        plan.iter().find(|c| c.restart == Some("loopd")),
        plan.iter().find(|c| c.restart == Some("brokerd")),
        plan.iter().find(|c| c.sink.lookalike.is_some()),
        plan.iter().find(|c| c.smuggle == Some("duplicate")),
        plan.iter().find(|c| c.smuggle == Some("fragment")),
    ];
    for c in picked {
        let c = c.expect("chain").clone();
        let found = compare::checks(&[(c, o.clone())], &report(vec![]), &[], &BTreeSet::new());
        assert_eq!(format!("{:?}", found[0].level), "Warn", "{found:?}");
        assert!(
            found[0]
                .said
                .ends_with("not tried (the read was denied (grant ssh): denied_by_grant)"),
            "{found:?}"
        );
    }
    // A direct chain stopped at its read is observed: ok, stopped.
    let found = compare::checks(
        &[(plan[0].clone(), o)],
        &report(vec![]),
        &[],
        &BTreeSet::new(),
    );
    assert_eq!(format!("{:?}", found[0].level), "Ok", "{found:?}");
}

/// A restart chain whose verdict is not its direct chain's warns, either way; agreeing, or
/// not tried, it does not.
#[test]
fn a_restart_that_changes_the_verdict_warns() {
    let plan = chains::plan(&rewritten(), 1, "n0", false);
    let restarted = plan
        .iter()
        .find(|c| c.restart == Some("brokerd"))
        .expect("restart");
    let direct = plan
        .iter()
        .find(|c| c.restart.is_none() && c.source == restarted.source && c.sink == restarted.sink)
        .expect("direct");
    let leak = Outcome {
        source: read_ok(DataClass::Private),
        laundering: Vec::new(),
        sink: fetched(),
        at_sink: true,
        bare: false,
        write: false,
    };
    let denied = Outcome {
        sink: Some((
            Some("web".into()),
            seen(
                2,
                "http_fetch",
                ToolResponse::Denied {
                    reason: DenyReason::TaintTooHigh,
                    detail: None,
                },
            ),
        )),
        at_sink: false,
        ..leak.clone()
    };
    let restarts = |a: &Outcome, b: &Outcome| {
        let pair = [(direct.clone(), a.clone()), (restarted.clone(), b.clone())];
        compare::checks(&pair, &report(vec![flow()]), &[], &BTreeSet::new())
            .into_iter()
            .filter(|c| c.check == "restart")
            .map(|c| (format!("{:?}", c.level), c.said))
            .collect::<Vec<_>>()
    };
    assert_eq!(restarts(&leak, &leak), []);
    assert_eq!(restarts(&denied, &denied), []);
    for (a, b) in [(&leak, &denied), (&denied, &leak)] {
        let found = restarts(a, b);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "Warn");
        assert!(found[0].1.contains("brokerd restarted"), "{found:?}");
    }
    let unread = Outcome {
        source: None,
        ..denied.clone()
    };
    assert_eq!(restarts(&leak, &unread), []);
}

/// A send and an untrusted write between the same two grants are told apart: a write chain
/// does not complete the send's flow, nor a send chain the write's (V57).
#[test]
fn a_write_completes_no_send_between_the_same_grants() {
    let plan = chains::plan(&rewritten(), 1, "n0", false);
    let untrusted_read = || {
        let r = ToolResponse::Result {
            content: (1..40).map(|n| chains::canary("n0", n)).collect(),
            class: DataClass::Private,
            untrusted: true,
            truncated: false,
        };
        Some((Some("notes".into()), seen(1, "read_file", r)))
    };
    let written = Outcome {
        source: untrusted_read(),
        laundering: Vec::new(),
        sink: fetched(),
        at_sink: true,
        bare: false,
        write: true,
    };
    let one = vec![(plan[0].clone(), written.clone())];
    assert_eq!(
        levels(&one, &report(vec![flow()])),
        pair(&[("chain 1", "Fail"), ("private_out", "Fail")])
    );
    // (The same grants by name, the sink a write: the shadow plays it.)
    let mut write = flow();
    write.severity = Severity::UntrustedWrite;
    write.sink.tool = "write_file".into();
    assert_eq!(
        levels(&one, &report(vec![write.clone()])),
        pair(&[("chain 1", "Ok"), ("untrusted_write", "Ok")])
    );
    let sent = vec![(
        plan[0].clone(),
        Outcome {
            write: false,
            ..written
        },
    )];
    assert_eq!(
        levels(&sent, &report(vec![write])),
        pair(&[("chain 1", "Fail"), ("untrusted_write", "Fail")])
    );
}
