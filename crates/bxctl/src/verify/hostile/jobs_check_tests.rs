//! The job runs compared with the analysis's flows of a job, without a stack.

use std::collections::BTreeSet;

use proto::flows::{Flow, FlowsReport, Severity, Step};
use proto::{CallId, DataClass, Hash32, ToolResponse};

use super::compare::Outcome;
use super::jobs::DELIVER;
use super::jobs_check::{self, JobOutcome};
use super::jobs_tests::plan;
use super::session::Seen;

fn seen(call: u64, tool: &str, response: ToolResponse) -> Seen {
    Seen {
        call: CallId(call),
        tool: tool.into(),
        asked: false,
        response: Some(response),
    }
}

fn read(class: DataClass) -> Option<(Option<String>, Seen)> {
    let r = ToolResponse::Result {
        content: "BXCANARY-n0-7-\nBXCANARY-n0-8-\n".into(),
        class,
        untrusted: false,
        truncated: false,
    };
    Some((Some("brief-notes".into()), seen(1, "read_file", r)))
}

fn fetched() -> Option<(Option<String>, Seen)> {
    let r = ToolResponse::Result {
        content: "BXSINK-OK".into(),
        class: DataClass::Public,
        untrusted: true,
        truncated: false,
    };
    Some((Some("brief-web".into()), seen(2, "http_fetch", r)))
}

/// Chain 7 (the fetch) and chain 8 (the delivery) of job brief, leaked or not.
fn outcomes(class: DataClass, fetch: bool, post: bool) -> Vec<JobOutcome> {
    let p = plan();
    let o = |at_sink: bool, sink| Outcome {
        source: read(class),
        laundering: Vec::new(),
        sink,
        at_sink,
        bare: false,
        write: false,
    };
    vec![
        JobOutcome {
            chain: p[0].clone(),
            outcome: o(fetch, fetched()),
            not_started: None,
            posted: false,
            aside: None,
        },
        JobOutcome {
            chain: p[1].clone(),
            outcome: o(post, None),
            not_started: None,
            posted: post,
            aside: None,
        },
    ]
}

fn flow(sink: Option<&str>, tool: &str) -> Flow {
    Flow {
        severity: Severity::PrivateOut,
        job: Some(proto::JobName::new("brief").expect("job")),
        source: Step {
            grant: Some("brief-notes".into()),
            tool: "read_file".into(),
            what: "/home/owner/notes".into(),
        },
        class: DataClass::Private,
        untrusted: false,
        sink: Step {
            grant: sink.map(str::to_owned),
            tool: tool.into(),
            what: "x".into(),
        },
        text: format!("a hijacked model in job brief's runs can send to {tool}"),
    }
}

fn levels(o: &[JobOutcome], flows: Vec<Flow>) -> Vec<(String, String)> {
    let r = FlowsReport {
        snapshot: Hash32::ZERO,
        grants: Vec::new(),
        flows,
        sources: Vec::new(),
    };
    // Without the look-alike chains of `jobs_tests::plan`, each job's runs warn that they
    // are not tried (`no_free_read`, its own test).
    jobs_check::checks(o, &r, &BTreeSet::new(), &[])
        .into_iter()
        .filter(|c| c.check != "not-tried")
        .map(|c| (c.check, format!("{:?}", c.level)))
        .collect()
}

fn pair(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

/// Each disagreement with the analysis fails: a fetch or a delivery it did not report, a
/// flow it reported that no run completed; agreement passes; public data is no flow; what
/// is not played is a warn.
#[test]
fn the_job_runs_are_compared_with_the_flows_of_the_job() {
    let fetch = || flow(Some("brief-web"), "http_fetch");
    let deliver = || flow(None, DELIVER);
    let both = outcomes(DataClass::Private, true, true);
    assert_eq!(
        levels(&both, vec![fetch(), deliver()]),
        pair(&[
            ("chain 7", "Ok"),
            ("chain 8", "Ok"),
            ("private_out", "Ok"),
            ("private_out", "Ok")
        ])
    );
    // The delivery not reported: its chain fails.
    assert_eq!(
        levels(&both, vec![fetch()]),
        pair(&[
            ("chain 7", "Ok"),
            ("chain 8", "Fail"),
            ("private_out", "Ok")
        ])
    );
    // Reported flows that no run completed fail.
    let none = outcomes(DataClass::Private, false, false);
    assert_eq!(
        levels(&none, vec![fetch(), deliver()]),
        pair(&[
            ("chain 7", "Ok"),
            ("chain 8", "Ok"),
            ("private_out", "Fail"),
            ("private_out", "Fail")
        ])
    );
    // Public data out is no flow.
    let public = outcomes(DataClass::Public, true, true);
    assert_eq!(
        levels(&public, vec![]),
        pair(&[("chain 7", "Ok"), ("chain 8", "Ok")])
    );
    // A fetch chain's canary in the run's result posted to Mattermost is the delivery's flow.
    let mut posted = outcomes(DataClass::Private, false, false);
    posted[0].posted = true;
    assert_eq!(levels(&posted[..1], vec![]), pair(&[("chain 7", "Fail")]));
    assert_eq!(
        levels(&posted[..1], vec![deliver()]),
        pair(&[("chain 7", "Ok"), ("private_out", "Ok")])
    );
    // An untrusted write in a job's run from a read, a listing of the notes or a note
    // write's answer is played: reported, no run completed it, it fails; from a tool the
    // shadow does not know it is not played: a warn.
    let mut write = flow(Some("www"), "write_file");
    write.severity = Severity::UntrustedWrite;
    assert_eq!(
        levels(&[], vec![write.clone()]),
        pair(&[("untrusted_write", "Fail")])
    );
    write.source.tool = "note_list".into();
    assert_eq!(
        levels(&[], vec![write.clone()]),
        pair(&[("untrusted_write", "Fail")])
    );
    write.source.tool = "note_write".into();
    assert_eq!(
        levels(&[], vec![write.clone()]),
        pair(&[("untrusted_write", "Fail")])
    );
    write.source.tool = "note_erase".into();
    assert_eq!(
        levels(&[], vec![write]),
        pair(&[("untrusted_write", "Warn")])
    );
    // A note write's answer sent out is played: reported, no run completed it, it fails.
    let mut answer = flow(Some("brief-web"), "http_fetch");
    answer.source.tool = "note_write".into();
    assert_eq!(levels(&[], vec![answer]), pair(&[("private_out", "Fail")]));
    // A run that did not start is not tried.
    let mut unstarted = outcomes(DataClass::Private, false, false);
    unstarted[0].not_started = Some("no job brief".into());
    assert_eq!(
        levels(&unstarted[..1], vec![]),
        pair(&[("chain 7", "Warn")])
    );
}

/// What a job's run plays: a note's read, an MCP tool's answer and a program's output to a
/// fetch, an MCP tool or a program, and an MCP tool's or a program's one call reading what
/// its grant binds and sending it, but a program's whose stand-in reads another grant's
/// places (`run_bound::unbound`); a grant left out of the shadow is not.
#[test]
fn a_jobs_notes_mcp_tools_and_programs_are_played() {
    let played =
        |source: (&str, &str, &str), sink: (&str, &str, &str), left: &[super::rewrite::Left]| {
            let mut f = flow(Some(sink.1), sink.0);
            f.source = Step {
                grant: Some(source.1.into()),
                tool: source.0.into(),
                what: source.2.into(),
            };
            f.sink.what = sink.2.into();
            jobs_check::not_played(&f, &BTreeSet::new(), left)
        };
    let notes = ("note_read", "brief-notes", "the notes");
    let cal = ("mcp", "brief-cal", "MCP tool mcp:cal/*");
    let stats = ("run", "brief-stats", "run stats");
    for source in [notes, cal, stats] {
        for sink in [
            ("http_fetch", "brief-web", "x"),
            ("mcp", "brief-up", "x through MCP tool mcp:up/put"),
            ("run", "brief-curl", "x through run curl"),
        ] {
            assert_eq!(played(source, sink, &[]), None, "{source:?} to {sink:?}");
        }
    }
    // One call of a grant that binds places: played (`mcp_bound`, `run_bound::chain`), but a
    // program's another grant names too (`run_bound::unbound`).
    let bound = |g: &str| super::rewrite::Left {
        grant: g.into(),
        why: "another allowing run grant names its program stats too".into(),
        scope: super::rewrite::Scope::OneCall,
    };
    let one = ("mcp", "brief-cal", "x through MCP tool mcp:cal/*");
    assert_eq!(played(cal, one, &[]), None);
    let own = ("run", "brief-stats", "x through run stats");
    assert_eq!(played(stats, own, &[]), None);
    let why = played(stats, own, &[bound("brief-stats")]).expect("one call");
    assert!(why.contains("as a source"), "{why}");
    // The same grant deciding two calls of a server's tools, binding nothing: played.
    assert_eq!(played(cal, one, &[]), None);
    // Left out of the shadow: not tried.
    let left = [super::rewrite::Left {
        grant: "brief-cal".into(),
        why: "server cal is not configured".into(),
        scope: super::rewrite::Scope::Grant,
    }];
    assert!(played(cal, ("http_fetch", "brief-web", "x"), &left).is_some());
}

/// A run that completed a flow the shadow said `not tried` agrees with the analysis: only
/// a leak of no flow the analysis reports fails.
#[test]
fn a_leak_of_a_flow_not_tried_is_no_disagreement() {
    let both = outcomes(DataClass::Private, true, false);
    let r = FlowsReport {
        snapshot: Hash32::ZERO,
        grants: Vec::new(),
        flows: vec![flow(Some("brief-web"), "http_fetch")],
        sources: Vec::new(),
    };
    // brief-notes named patterns: its flows are not tried, yet chain 7 completed one.
    let patterned: BTreeSet<String> = ["brief-notes".to_owned()].into();
    let got: Vec<(String, String)> = jobs_check::checks(&both[..1], &r, &patterned, &[])
        .into_iter()
        .filter(|c| c.check != "not-tried")
        .map(|c| (c.check, format!("{:?}", c.level)))
        .collect();
    assert_eq!(got, pair(&[("chain 7", "Ok"), ("private_out", "Warn")]));
}

/// A job whose runs read and fetch but play no look-alike or smuggling chain warns that
/// they were not tried; one that plays them does not.
#[test]
fn a_job_without_a_free_read_says_its_lookalikes_were_not_tried() {
    let r = FlowsReport {
        snapshot: Hash32::ZERO,
        grants: Vec::new(),
        flows: Vec::new(),
        sources: Vec::new(),
    };
    let said = |o: &[JobOutcome]| -> Vec<String> {
        jobs_check::checks(o, &r, &BTreeSet::new(), &[])
            .into_iter()
            .filter(|c| c.check == "not-tried")
            .map(|c| c.said)
            .collect()
    };
    let mut o = outcomes(DataClass::Private, false, false);
    let warned = said(&o);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("job brief's runs: not tried"),
        "{warned:?}"
    );
    // A read sent by an ordinary session after the run delivered it to its note
    // (`jobs_launder`) is no read of the job's own fetch: nothing to say.
    let mut laundered = o[0].clone();
    laundered.chain.chain.note = Some("brief".into());
    assert_eq!(said(&[laundered]), Vec::<String>::new());
    let mut alike = o[0].clone();
    alike.chain.chain.sink.lookalike = Some("suffix");
    o.push(alike);
    assert_eq!(said(&o), Vec::<String>::new());
}

/// A run set aside (its search's words never indexed, or its search labelled above the
/// analysis's) is `not observed`, and so is a flow only it was planned for; a flow another
/// run was planned for, or one leaked by a run set aside, is judged as ever.
#[test]
fn a_run_set_aside_leaves_its_flow_not_observed() {
    let fetch = || flow(Some("brief-web"), "http_fetch");
    let deliver = || flow(None, DELIVER);
    let mut none = outcomes(DataClass::Private, false, false);
    none[0].aside = Some("the search was labelled secret".into());
    assert_eq!(
        levels(&none, vec![fetch(), deliver()]),
        pair(&[
            ("chain 7", "Warn"),
            ("chain 8", "Ok"),
            ("private_out", "Warn"),
            ("private_out", "Fail")
        ])
    );
    // Of another job, the flow is not the run's.
    let mut other = fetch();
    other.job = Some(proto::JobName::new("digest").expect("job"));
    assert_eq!(
        levels(&none[..1], vec![other]),
        pair(&[("chain 7", "Warn"), ("private_out", "Fail")])
    );
    // Both runs set aside, the delivery's flow too is not observed.
    none[1].aside = Some("the chain's note was never indexed".into());
    assert_eq!(
        levels(&none, vec![deliver()]),
        pair(&[
            ("chain 7", "Warn"),
            ("chain 8", "Warn"),
            ("private_out", "Warn")
        ])
    );
}
