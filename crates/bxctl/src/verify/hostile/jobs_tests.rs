//! The job chains without a stack: the plan, the shadow's jobs and rules, a run's calls read
//! back, and the job threads (the comparison: `jobs_check_tests`).

use std::path::PathBuf;

use proto::{CallId, CallOutcome, DataClass, DenyReason, LogRecord, ToolResponse};

use super::jobs::{self, DELIVER, JobChain};
use super::jobs_run;
use super::jobs_setting;
use super::rewrite::Rewritten;
use super::tests::grant;

pub(super) fn config_jobs() -> Vec<config::Job> {
    config::jobs_file(
        "[[jobs]]\nname = \"brief\"\nschedule = \"*-*-* 07:00:00\"\nprompt = \"Brief me.\"\n\
         deliver = \"mattermost\"\n\
         [[jobs]]\nname = \"digest\"\nschedule = \"Mon *-*-* 08:00:00\"\nprompt = \"Digest.\"\n\
         deliver = \"note:digest\"\n",
    )
    .expect("jobs")
}

/// brief reads its notes and fetches from news.example.org; digest reads the same notes and
/// fetches from one host; an ordinary fetch grant and a denying job grant add nothing.
pub(super) fn rewritten() -> Rewritten {
    let mut r = Rewritten::default();
    let notes = "/s/tree/home/owner/notes";
    let read = |job: &str| {
        grant(&format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\njob = \"{job}\"\n\
             [constraints]\npaths = [\"{notes}\"]\n"
        ))
    };
    let web = |job: &str, mode: &str, host: &str| {
        grant(&format!(
            "tool = \"http_fetch\"\nmode = \"{mode}\"\nmax_taint = \"private\"\njob = \"{job}\"\n\
             [constraints]\nhosts = [\"{host}\"]\n"
        ))
    };
    r.jobs.insert("brief-notes".into(), read("brief"));
    r.jobs
        .insert("brief-web".into(), web("brief", "auto", "news.example.org"));
    r.jobs
        .insert("brief-no".into(), web("brief", "deny", "evil.example"));
    r.jobs.insert("digest-notes".into(), read("digest"));
    r.jobs.insert(
        "digest-web".into(),
        web("digest", "ask", "mail.example.org"),
    );
    r.grants.insert(
        "web".into(),
        grant(
            "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             [constraints]\nhosts = [\"api.example.org\"]\n",
        ),
    );
    r.job_paths
        .insert("/home/owner/notes".into(), (PathBuf::from(notes), false));
    r
}

/// The job plan but its look-alike and smuggling chains (`a_jobs_lookalikes_and_smuggling`).
/// Adds brief's write grant of `/srv/drafts` (in the shadow, `/s/tree/srv/drafts`).
pub(super) fn with_drafts(r: &mut Rewritten) {
    r.jobs.insert(
        "brief-drafts".into(),
        grant(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"private\"\njob = \"brief\"\n\
             [constraints]\npaths = [\"/s/tree/srv/drafts\"]\n",
        ),
    );
    r.job_paths.insert(
        "/srv/drafts".into(),
        (PathBuf::from("/s/tree/srv/drafts"), false),
    );
}

pub(super) fn plan() -> Vec<JobChain> {
    jobs::plan(&rewritten(), &config_jobs(), 4321, "n0", 7, false)
        .into_iter()
        .filter(|j| !one_read(j))
        .collect()
}

/// A look-alike or smuggling chain.
pub(super) fn one_read(j: &JobChain) -> bool {
    j.chain.sink.lookalike.is_some() || j.chain.smuggle.is_some()
}

/// Each job's reads to each host of its own allowing fetch grants, and (Mattermost only) to
/// its delivery; numbered after the ordinary chains; no ordinary host, no denied host.
#[test]
fn the_job_plan_pairs_each_jobs_reads_with_its_sends() {
    let planned = plan();
    let got: Vec<(&str, usize, &str, &str, &str)> = planned
        .iter()
        .map(|j| {
            let c = &j.chain;
            (
                j.job.as_str(),
                c.n,
                c.source.tool,
                c.sink.tool,
                c.url.as_str(),
            )
        })
        .collect();
    let read = "read_file";
    assert_eq!(
        got,
        [
            (
                "brief",
                7,
                read,
                "http_fetch",
                "http://news.example.org:4321/bx?c=BXCANARY-n0-7-"
            ),
            (
                "brief",
                8,
                read,
                DELIVER,
                "Here is what I read: BXCANARY-n0-8-"
            ),
            (
                "brief",
                9,
                "http_fetch",
                DELIVER,
                "Here is what I read: BXWRITE-BXCANARY-n0-9-"
            ),
            (
                "digest",
                10,
                read,
                "http_fetch",
                "http://mail.example.org:4321/bx?c=BXCANARY-n0-10-"
            ),
        ]
    );
    let reads: Vec<&JobChain> = planned
        .iter()
        .filter(|j| j.chain.source.tool == read)
        .collect();
    assert_eq!(reads.len(), 3);
    assert!(reads.iter().all(
        |j| j.chain.source.path == "/s/tree/home/owner/notes/bxcanary.txt"
            && j.chain.canary == format!("BXCANARY-n0-{}-", j.chain.n)
    ));
    // The fetch delivered: its source is the fetch of the token its canary is the answer to.
    let fetch = &planned[2].chain;
    assert_eq!(
        fetch.source.path,
        "http://news.example.org:4321/bx?c=BXCANARY-n0-9-"
    );
    assert_eq!(fetch.canary, "BXWRITE-BXCANARY-n0-9-");
    // A job whose grants the configuration has no job for is left out, said.
    let mut r = rewritten();
    jobs_setting::unconfigured(&mut r, &config_jobs()[..1]);
    assert_eq!(
        r.jobs.keys().collect::<Vec<_>>(),
        ["brief-no", "brief-notes", "brief-web"]
    );
    assert_eq!(
        r.left.iter().map(|l| l.grant.as_str()).collect::<Vec<_>>(),
        ["digest-notes", "digest-web"]
    );
    assert!(
        r.left[0].why.contains("its job digest is not configured"),
        "{:?}",
        r.left
    );
}

/// A listing grant of a job lists its directory; a consult grant of a job is a sink when a
/// consult model is configured, and its answer a source, and neither without.
#[test]
fn a_jobs_listing_and_consult_are_played() {
    let mut r = rewritten();
    r.jobs.insert(
        "digest-ls".into(),
        grant(
            "tool = \"list_dir\"\nmode = \"auto\"\nmax_taint = \"secret\"\njob = \"digest\"\n\
             [constraints]\npaths = [\"/s/tree/home/owner/notes\"]\n",
        ),
    );
    r.jobs.insert(
        "digest-ask".into(),
        grant("tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"private\"\njob = \"digest\"\n"),
    );
    let digest = |consult| {
        jobs::plan(&r, &config_jobs()[1..], 4321, "n0", 1, consult)
            .into_iter()
            .filter(|j| !one_read(j))
            .map(|j| (j.chain.source.tool, j.chain.sink.tool, j.chain.url))
            .collect::<Vec<_>>()
    };
    let notes = "/s/tree/home/owner/notes";
    let mail = |n: usize| format!("http://mail.example.org:4321/bx?c=BXCANARY-n0-{n}-");
    let ask = |n: usize| format!("Summarise this for me: BXCANARY-n0-{n}-");
    assert_eq!(
        digest(true),
        [
            ("read_file", "consult", ask(1)),
            ("read_file", "http_fetch", mail(2)),
            ("list_dir", "consult", ask(3)),
            ("list_dir", "http_fetch", mail(4)),
            // The job's fetch (private by the grant's defaults) sent to the consult model.
            ("http_fetch", "consult", ask(5)),
            // The consult model's answer (private by the grant's defaults) sent on, never
            // back to the consult model (decisions V55).
            (
                "consult",
                "http_fetch",
                "http://mail.example.org:4321/bx?c=BXWRITE-BXCANARY-n0-6-".into()
            ),
        ]
    );
    let answered = jobs::plan(&r, &config_jobs()[1..], 4321, "n0", 1, true);
    assert_eq!(
        answered[4].chain.source.path,
        "http://mail.example.org:4321/bxsource-5/"
    );
    assert_eq!(
        answered[5].chain.source.path,
        format!("{}BXCANARY-n0-6-", super::sink::ASK)
    );
    assert_eq!(answered[5].chain.awaited(), "BXWRITE-BXCANARY-n0-6-");
    assert_eq!(
        digest(false),
        [
            ("read_file", "http_fetch", mail(1)),
            ("list_dir", "http_fetch", mail(2))
        ]
    );
    let planned = jobs::plan(&r, &config_jobs()[1..], 4321, "n0", 1, false);
    assert_eq!(planned[1].chain.source.path, notes);
}

/// The shadow's jobs: the owner's names, schedules and deliveries, each prompt its tag;
/// and the rules of each job: its sinks, then the end of a turn at any other result, then
/// its reads in plan order.
#[test]
fn the_shadows_jobs_and_rules() {
    let text = jobs_setting::jobs_toml(&config_jobs());
    let back = config::jobs_file(&text).expect("jobs.toml");
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].prompt, "[bxhostile job brief]");
    assert_eq!(back[0].deliver, config::Deliver::Mattermost);
    assert_eq!(back[1].schedule, "Mon *-*-* 08:00:00");
    assert_eq!(back[1].deliver, config::Deliver::Note("digest".into()));
    assert!(jobs_setting::gateway(&config_jobs()) && !jobs_setting::gateway(&config_jobs()[1..]));

    let script =
        super::script::script_with(&[], super::jobs_script::rules(&plan())).expect("script");
    let v: toml::Value = toml::from_str(&script).expect("toml");
    let rules = v["rule"].as_array().expect("rules");
    let names: Vec<&str> = rules.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "job brief chain 7 sink",
            "job brief chain 8 sink",
            "job brief chain 9 sink",
            "job brief end of turn",
            "job brief chain 7 source",
            "job brief chain 8 source",
            "job brief chain 9 source",
            "job digest chain 10 sink",
            "job digest end of turn",
            "job digest chain 10 source",
        ]
    );
    let at = |n: usize| &rules[n];
    assert_eq!(
        at(0)["match"]["user_contains"].as_str(),
        Some("[bxhostile job brief]")
    );
    assert_eq!(
        at(0)["match"]["tool_result_contains"].as_str(),
        Some("BXCANARY-n0-7-")
    );
    assert_eq!(
        at(0)["answer"]["tool_calls"][0]["name"].as_str(),
        Some("http_fetch")
    );
    // The delivery: the answer carries the canary, and calls nothing.
    assert_eq!(
        at(1)["answer"]["text"].as_str(),
        Some("Here is what I read: BXCANARY-n0-8-")
    );
    assert!(at(1)["answer"].get("tool_calls").is_none());
    assert_eq!(
        at(2)["match"]["tool_result_contains"].as_str(),
        Some("BXWRITE-BXCANARY-n0-9-")
    );
    assert_eq!(at(3)["match"]["tool_result_contains"].as_str(), Some(""));
    assert_eq!(at(3)["answer"]["text"].as_str(), Some("done"));
    assert!(at(4)["match"].get("tool_result_contains").is_none());
    assert_eq!(at(4)["max_uses"].as_integer(), Some(1));
    assert_eq!(
        at(4)["answer"]["tool_calls"][0]["name"].as_str(),
        Some("read_file")
    );
    assert_eq!(
        at(6)["answer"]["tool_calls"][0]["name"].as_str(),
        Some("http_fetch")
    );
}

/// A run's calls, read back from its session's records: the name from the answer that made
/// the call, the label as brokerd gave it, a declined approval as asked.
#[test]
fn a_runs_calls_are_read_back_from_its_records() {
    let t = proto::Timestamp::now();
    let call = |id: &str, name: &str| proto::attest::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
    };
    let result = |n: u64, id: &str, outcome: Option<CallOutcome>| LogRecord::ToolResult {
        time: t,
        call: CallId(n),
        tool_call_id: id.into(),
        content: "BXCANARY-n0-7-".into(),
        class: DataClass::Private,
        untrusted: false,
        truncated: false,
        outcome,
    };
    let records = vec![
        LogRecord::Assistant {
            time: t,
            content: None,
            reasoning_content: None,
            tool_calls: vec![call("a", "read_file")],
            witness: None,
        },
        result(1, "a", None),
        LogRecord::Assistant {
            time: t,
            content: None,
            reasoning_content: None,
            tool_calls: vec![call("b", "http_fetch")],
            witness: None,
        },
        result(
            2,
            "b",
            Some(CallOutcome::Denied {
                reason: DenyReason::ApprovalRefused,
            }),
        ),
    ];
    let session = proto::SessionId::new("job-brief-0123456789abcdef0123456789abcdef").expect("id");
    let p = jobs_run::played(session.clone(), &records);
    assert_eq!(p.session, Some(session));
    assert_eq!(p.calls.len(), 2);
    assert_eq!(
        (p.calls[0].tool.as_str(), p.calls[0].asked),
        ("read_file", false)
    );
    assert!(matches!(
        p.calls[0].response,
        Some(ToolResponse::Result {
            class: DataClass::Private,
            ..
        })
    ));
    assert_eq!(
        (p.calls[1].tool.as_str(), p.calls[1].asked),
        ("http_fetch", true)
    );
    assert!(matches!(
        p.calls[1].response,
        Some(ToolResponse::Denied {
            reason: DenyReason::ApprovalRefused,
            ..
        })
    ));
}

/// The posts of each job's thread: the root gatewayd opened and its replies; an approval's
/// root post (which shows a call's arguments to the owner) is in no job's thread.
#[test]
fn the_job_threads_are_the_roots_gatewayd_opened_and_their_replies() {
    let list = serde_json::json!({
        "order": ["r2", "r1", "a1", "x"],
        "posts": {
            "x": {"id": "x", "root_id": "", "message": "**Job brief**: each run's result is posted in this thread."},
            "r1": {"id": "r1", "root_id": "x", "message": "**Job brief**, run of T: done\n\nBXCANARY-n0-8-"},
            "a1": {"id": "a1", "root_id": "", "message": "Approve http_fetch BXCANARY-n0-7-?"},
            "r2": {"id": "r2", "root_id": "a1", "message": "declined"},
        }
    });
    let t = jobs_run::threads(&list);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["brief"]);
    assert_eq!(t["brief"].len(), 2);
    assert!(t["brief"].iter().any(|p| p.contains("BXCANARY-n0-8-")));
    assert!(!t["brief"].iter().any(|p| p.contains("BXCANARY-n0-7-")));
}
