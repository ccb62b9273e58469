//! A write's result as a source: the plan, the script, the planted files and the comparison.

use std::collections::BTreeSet;

use proto::flows::{Flow, FlowsReport, Severity, Step};
use proto::{CallId, DataClass, Hash32, ToolResponse};

use super::chains::{self, Chain};
use super::compare::{self, Outcome};
use super::rewrite::{Left, Scope};
use super::session::Seen;
use super::tests::{grant, rewritten};
use super::write_source::{is, plant, unplayed};

const WWW: &str = "/s/tree/home/owner/www";

/// The shared shadow with a write grant on `www` (`extra` after its keys) and an edit
/// grant, or with `tool`'s grant alone.
fn shadow(tool: &str, extra: &str) -> super::rewrite::Rewritten {
    let mut r = rewritten();
    r.grants.insert(
        "www-write".into(),
        grant(&format!(
            "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             result_class = \"private\"\n{extra}[constraints]\npaths = [{WWW:?}]\n\
             patterns = [\"*.html\"]\n"
        )),
    );
    r.paths.insert(
        "/home/owner/www".into(),
        (std::path::PathBuf::from(WWW), false),
    );
    r
}

/// A write grant is a source to every sink but the look-alikes: each chain appends to a
/// file of its own its patterns match, and what is looked for at the sink is the hash of
/// the file's new text (its planted canary line and the append), in no argument of the
/// call; the sink's call carries it.
#[test]
fn a_write_grant_is_a_source_whose_canary_is_the_files_new_hash() {
    let r = shadow("write_file", "");
    let plan = chains::plan(&r, 4321, "n0", false);
    // To the sinks (a write's own result driving a write is `untrusted_write`'s).
    let sent = |c: &&Chain| is(c) && c.sink.tool == "http_fetch";
    let written: Vec<&Chain> = plan.iter().filter(sent).collect();
    let sinks: Vec<&str> = written.iter().map(|c| c.sink.entry.as_str()).collect();
    assert_eq!(sinks, ["api.example.org", "*.wikipedia.org"], "{plan:?}");
    let last = plan
        .iter()
        .filter(|c| !is(c))
        .map(|c| c.n)
        .filter(|n| *n < written[0].n)
        .max();
    for c in &written {
        assert!(Some(c.n) > last, "numbered after every other chain");
        assert_eq!(c.source.path, format!("{WWW}/bxwrite-{}-planted.html", c.n));
        assert_eq!(c.source.owner, "/home/owner/www");
        let text = format!("BXCANARY-n0-{}-\nBXAPPEND-{}\n", c.n, c.n);
        assert_eq!(c.canary, Hash32::digest(text.as_bytes()).to_string());
        assert!(c.url.contains(&c.canary), "{}", c.url);
        let call = super::script::source_answer(c);
        assert_eq!(call.tool_calls[0].name, "write_file");
        let args: serde_json::Value =
            serde_json::from_str(&call.tool_calls[0].arguments).expect("args");
        assert_eq!(args["mode"], "append");
        assert_eq!(args["path"], c.source.path.as_str());
        assert!(!call.tool_calls[0].arguments.contains("BXCANARY"));
        assert!(!call.tool_calls[0].arguments.contains(&c.canary));
    }
    // The send waits for the result holding the hash.
    let script: toml::Value =
        toml::from_str(&super::script::script(&plan).expect("script")).expect("toml");
    let rules = script["rule"].as_array().expect("rules");
    let c = written[0];
    let sink = rules
        .iter()
        .find(|r| r["name"].as_str() == Some(&format!("chain {} sink", c.n)))
        .expect("sink rule");
    assert_eq!(
        sink["match"]["tool_result_contains"].as_str(),
        Some(c.canary.as_str())
    );
}

/// An edit grant's chain replaces the line planted below its canary line; the hash is of
/// the text the edit leaves.
#[test]
fn an_edit_grant_is_a_source_too() {
    let r = shadow("edit_file", "");
    let plan = chains::plan(&r, 4321, "n0", false);
    let c = plan.iter().find(|c| is(c)).expect("an edit source chain");
    assert_eq!(c.source.tool, "edit_file");
    let text = format!("BXCANARY-n0-{}-\nBXEDITED-{}.\n", c.n, c.n);
    assert_eq!(c.canary, Hash32::digest(text.as_bytes()).to_string());
    let call = super::script::source_answer(c);
    let args: serde_json::Value =
        serde_json::from_str(&call.tool_calls[0].arguments).expect("args");
    assert_eq!(args["old"], format!("BXEDIT-{}.", c.n));
    assert_eq!(args["new"], format!("BXEDITED-{}.", c.n));
}

/// Planting writes each chain's file with its canary line (and the edit's line), below
/// the shadow's tree only as the plan names it.
#[test]
fn plant_writes_the_text_the_hash_is_computed_from() {
    let base = std::env::temp_dir().join(format!("wt-write-source-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let dir = base.join("www").display().to_string();
    let mut r = shadow("edit_file", "");
    r.grants
        .get_mut("www-write")
        .expect("grant")
        .constraints
        .paths = vec![dir.clone()];
    r.paths
        .insert("/home/owner/www".into(), (base.join("www"), false));
    let plan = chains::plan(&r, 4321, "n0", false);
    plant(&plan, "n0").expect("plant");
    let c = plan.iter().find(|c| is(c)).expect("an edit source chain");
    let text = std::fs::read_to_string(&c.source.path).expect("planted");
    assert_eq!(text, format!("BXCANARY-n0-{}-\nBXEDIT-{}.\n", c.n, c.n));
    let _ = std::fs::remove_dir_all(&base);
}

/// Not played as a source, and said: modes without `append`, patterns naming only a file
/// other chains write too, a granted file; a grant that plays is not said.
#[test]
fn grants_whose_result_is_not_played_are_said_as_sources_only() {
    let said = |r: &super::rewrite::Rewritten| {
        let left = unplayed(r);
        assert!(!chains::plan(r, 9, "n0", false).iter().any(is), "{left:?}");
        assert!(
            left.iter()
                .all(|l| l.scope == Scope::Source && l.grant == "www-write")
        );
        left.into_iter()
            .map(|l| l.why)
            .collect::<Vec<_>>()
            .join("; ")
    };
    let create = shadow("write_file", "");
    let mut create = create;
    create
        .grants
        .get_mut("www-write")
        .expect("grant")
        .constraints
        .modes = vec![
        proto::tools::WriteMode::Create,
        proto::tools::WriteMode::Replace,
    ];
    assert!(said(&create).contains("no append"));
    let mut literal = shadow("write_file", "");
    literal
        .grants
        .get_mut("www-write")
        .expect("grant")
        .constraints
        .patterns = vec!["index.html".into(), "*/www/index.html".into()];
    assert!(said(&literal).contains("only a file other chains write too"));
    let mut file = rewritten();
    file.grants.insert(
        "www-write".into(),
        grant(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             [constraints]\npaths = [\"/s/tree/home/owner/todo.md\"]\n",
        ),
    );
    assert!(said(&file).contains("paths are files"));
    assert!(unplayed(&shadow("write_file", "")).is_empty());
    assert!(unplayed(&shadow("edit_file", "")).is_empty());
}

fn step(grant: &str, tool: &str, what: &str) -> Step {
    Step {
        grant: Some(grant.into()),
        tool: tool.into(),
        what: what.into(),
    }
}

fn report(flows: Vec<Flow>) -> FlowsReport {
    FlowsReport {
        snapshot: Hash32::ZERO,
        grants: vec!["www-write".into(), "web".into()],
        flows,
        sources: Vec::new(),
    }
}

fn flow(severity: Severity, source: Step, sink: Step) -> Flow {
    Flow {
        severity,
        job: None,
        source,
        class: DataClass::Private,
        untrusted: true,
        sink,
        text: "a hijacked model can write and send".into(),
    }
}

/// A write source's flow is compared as a read's: agreed by a chain whose hash reached the
/// sink, failed when none did; a grant not played as a source is `not tried` for its flows
/// from it, and only for those (an untrusted write into it is still held to the chains).
#[test]
fn a_write_sources_flow_is_compared() {
    let r = shadow("write_file", "");
    let plan = chains::plan(&r, 4321, "n0", false);
    let c = plan
        .iter()
        .find(|c| is(c) && c.sink.entry == "api.example.org")
        .expect("a chain to api.example.org");
    let call = |n: u64, tool: &str, grant: &str, content: String| {
        let response = ToolResponse::Result {
            content,
            class: DataClass::Private,
            untrusted: true,
            truncated: false,
        };
        let seen = Seen {
            call: CallId(n),
            tool: tool.into(),
            asked: false,
            response: Some(response),
        };
        Some((Some(grant.to_owned()), seen))
    };
    let wrote = format!("wrote {}: 30 bytes, sha256 {}", c.source.path, c.canary);
    let leak = Outcome {
        source: call(1, "write_file", "www-write", wrote),
        laundering: Vec::new(),
        sink: call(2, "http_fetch", "web", "BXSINK-OK".into()),
        at_sink: true,
        bare: false,
        write: false,
    };
    let out = report(vec![flow(
        Severity::PrivateOut,
        step("www-write", "write_file", "/home/owner/www"),
        step("web", "http_fetch", "api.example.org"),
    )]);
    let none = BTreeSet::new();
    let agreed = compare::checks(&[(c.clone(), leak)], &out, &[], &none);
    assert!(
        agreed[0].said.starts_with(
            "append to a file in /home/owner/www (private) via grant www-write, then send the \
             file's new hash to api.example.org via grant web: leaked, as the flows analysis \
             reports"
        ),
        "{agreed:?}"
    );
    assert_eq!(format!("{:?}", agreed[1].level), "Ok", "{agreed:?}");
    let failed = compare::checks(&[], &out, &[], &none);
    assert_eq!(format!("{:?}", failed[0].level), "Fail", "{failed:?}");
    // Its patterns named the chain's file: held to the chains all the same.
    let patterned = BTreeSet::from(["www-write".to_owned()]);
    let failed = compare::checks(&[], &out, &[], &patterned);
    assert_eq!(format!("{:?}", failed[0].level), "Fail", "{failed:?}");
    // A write refused says so as the write's.
    let denied = Outcome {
        source: Some((
            Some("www-write".into()),
            Seen {
                call: CallId(1),
                tool: "write_file".into(),
                asked: false,
                response: Some(ToolResponse::Denied {
                    reason: proto::DenyReason::WriteDown,
                    detail: None,
                }),
            },
        )),
        laundering: Vec::new(),
        sink: None,
        at_sink: false,
        bare: false,
        write: false,
    };
    let stopped = compare::checks(&[(c.clone(), denied)], &report(Vec::new()), &[], &none);
    assert!(
        stopped[0]
            .said
            .ends_with("stopped (the write was denied (grant www-write): write_down)"),
        "{stopped:?}"
    );
    let left = [Left {
        grant: "www-write".into(),
        why: "its modes allow no append".into(),
        scope: Scope::Source,
    }];
    let warned = compare::checks(&[], &out, &left, &none);
    assert_eq!(format!("{:?}", warned[0].level), "Warn", "{warned:?}");
    assert!(
        warned[0].said.contains("not played as a source"),
        "{warned:?}"
    );
    assert!(
        warned[1]
            .said
            .starts_with("grant www-write as a source: not tried: its modes allow no append"),
        "{warned:?}"
    );
    // Its untrusted writes are still compared: no chain completed this one, a `FAIL`.
    let into = report(vec![flow(
        Severity::UntrustedWrite,
        step("web", "http_fetch", "api.example.org"),
        step("www-write", "write_file", "/home/owner/www"),
    )]);
    let held = compare::checks(&[], &into, &left, &none);
    assert_eq!(format!("{:?}", held[0].level), "Fail", "{held:?}");
}

/// In a job's run, a write grant of the job's is a source to each of its sinks, its
/// delivery included (the run answers with the hash); a job's write grant whose result is
/// not played is said for the job's flows.
#[test]
fn a_jobs_write_grant_is_a_source_of_its_runs() {
    let mut r = super::rewrite::Rewritten::default();
    r.jobs.insert(
        "brief-write".into(),
        grant(&format!(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             result_class = \"private\"\njob = \"brief\"\n[constraints]\npaths = [{WWW:?}]\n\
             patterns = [\"*.html\"]\n"
        )),
    );
    r.job_paths
        .insert("/srv/www".into(), (std::path::PathBuf::from(WWW), false));
    let jobs = config::jobs_file(
        "[[jobs]]\nname = \"brief\"\nschedule = \"*-*-* 07:00:00\"\nprompt = \"Brief me.\"\n\
         deliver = \"mattermost\"\n",
    )
    .expect("jobs");
    let plan = super::jobs::plan(&r, &jobs, 4321, "n0", 7, false);
    // To the delivery, then to the grant's own next write (`untrusted_write`).
    assert_eq!(plan.len(), 2, "{plan:?}");
    let next = &plan[1].chain;
    assert_eq!(next.source.path, format!("{WWW}/bxwrite-8-planted.html"));
    assert_eq!(
        (next.sink.tool, next.url.as_str()),
        ("write_file", format!("{WWW}/bxwrite-8.html").as_str())
    );
    let c = &plan[0].chain;
    assert_eq!((c.n, c.source.tool), (7, "write_file"));
    assert_eq!(c.source.path, format!("{WWW}/bxwrite-7-planted.html"));
    let text = "BXCANARY-n0-7-\nBXAPPEND-7\n";
    assert_eq!(c.canary, Hash32::digest(text.as_bytes()).to_string());
    assert_eq!(c.url, super::jobs::answer(&c.canary));
    // The run's first call is the append.
    let rules = super::jobs_script::rules(&plan);
    let source = rules
        .iter()
        .find(|r| r.name == "job brief chain 7 source")
        .expect("source rule");
    assert_eq!(source.answer.tool_calls[0].name, "write_file");
    // Not played when its modes allow no append: said for the job's flow.
    r.jobs
        .get_mut("brief-write")
        .expect("grant")
        .constraints
        .modes = vec![proto::tools::WriteMode::Create];
    assert!(super::jobs::plan(&r, &jobs, 4321, "n0", 7, false).is_empty());
    let left = unplayed(&r);
    assert_eq!(left.len(), 1, "{left:?}");
    let mut f = flow(
        Severity::PrivateOut,
        step("brief-write", "write_file", "/srv/www"),
        step("", "deliver", "mattermost"),
    );
    f.sink.grant = None;
    f.job = Some(proto::JobName::new("brief").expect("job"));
    let why = super::jobs_check::not_played(&f, &BTreeSet::new(), &left);
    assert!(why.is_some_and(|w| w.contains("not played as a source")));
    assert_eq!(
        super::jobs_check::not_played(&f, &BTreeSet::new(), &[]),
        None
    );
}
