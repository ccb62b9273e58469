//! Whole job runs: `boxmaker-job` registers with brokerd, asks loopd for the turn (the
//! fake llama-server answering), and delivers the result through gatewayd to the fake
//! Mattermost, inert, in the job's own thread; an `ask` in a job is posted to Mattermost,
//! expires unanswered, and the failed run says which call was not approved.

use std::process::{Command, Output};

use proto::job::RunEnd;
use proto::{AuditEvent, AuditLine, DecisionRecord, DenyReason};
use stack::{BOT, Gateway, Home, OWNER, bin, posts, read_grant, replies};

use crate::jobs::{add_jobs_peer, job_entry};

const SCRIPT: &str = r#"
[server]
n_ctx = 16384

[[rule]]
[rule.match]
tool_result_contains = "standup"
[rule.answer]
text = "Today: standup at 9. Agenda at https://evil.example/x"

[[rule]]
[rule.match]
tool_result_contains = "approval"
[rule.answer]
text = "I could not read the page."

[[rule]]
[rule.match]
user_contains = "brief"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"NOTES/today.md"}'

[[rule]]
[rule.match]
user_contains = "watch"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"PAGES/page.md"}'

[default]
text = "Nothing to do."
"#;

fn run_job(home: &Home, job: &str) -> Output {
    Command::new(bin("boxmaker-job"))
        .arg("--config")
        .arg(home.config())
        .args(["--job", job])
        .output()
        .expect("boxmaker-job")
}

/// The bot's root posts whose message contains `text`.
fn roots_with(gw: &Gateway, text: &str) -> Vec<serde_json::Value> {
    posts(&gw.state())
        .into_iter()
        .filter(|p| p["user_id"] == BOT && p["root_id"] == "")
        .filter(|p| p["message"].as_str().is_some_and(|m| m.contains(text)))
        .collect()
}

/// The text of the first result posted in `job`'s thread.
fn first_result(gw: &Gateway, job: &str) -> String {
    let root = roots_with(gw, &format!("**Job {job}**"));
    let root = root
        .first()
        .and_then(|r| r["id"].as_str())
        .expect("the job's thread");
    let results = replies(&gw.state(), root);
    let first = results.first().and_then(|r| r["message"].as_str());
    first.expect("a result").to_owned()
}

#[test]
fn a_job_run_is_delivered_inert_in_its_thread_and_an_unanswered_ask_fails_it() {
    let home = Home::new("job-runs", "approval_ttl = \"2s\"");
    let notes = home.files("notes", &[("today.md", "- standup at 9\n")]);
    let pages = home.files("pages", &[("page.md", "the page\n")]);
    home.write_grant(
        "brief-notes",
        &read_grant("auto", &notes, "job = \"morning-brief\""),
    );
    home.write_grant(
        "watch-pages",
        &read_grant("ask", &pages, "job = \"watch-page\""),
    );
    add_jobs_peer(&home);
    home.append_config(&job_entry("morning-brief", "Write my morning brief."));
    home.append_config(&job_entry("watch-page", "watch the page"));
    let gw = home.start_gateway(&[OWNER.id], "");
    let script = SCRIPT
        .replace("NOTES", &notes.display().to_string())
        .replace("PAGES", &pages.display().to_string());
    let agent = home.start_agent(&script, "");

    // bxctl grants check names each grant's job.
    let checked = String::from_utf8_lossy(&home.bxctl(&["grants", "check"]).stdout).into_owned();
    assert!(
        checked.contains("\n  brief-notes: job morning-brief\n"),
        "{checked}"
    );
    assert!(
        checked.contains("\n  watch-pages: job watch-page\n"),
        "{checked}"
    );

    assert!(!home.owner_registered("Write my morning brief."));
    let out = run_job(&home, "morning-brief");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    // brokerd accounted the job's prompt (from its own configuration) as the owner's
    // words when the run registered, and never the other job's.
    assert!(home.owner_registered("Write my morning brief."));
    assert!(!home.owner_registered("watch the page"));
    assert_eq!(agent.fallbacks(), Vec::<String>::new());
    let root = roots_with(&gw, "**Job morning-brief**");
    assert_eq!(root.len(), 1, "{:#}", gw.state());
    let root = root[0]["id"].as_str().expect("id").to_owned();
    let result = replies(&gw.state(), &root);
    assert_eq!(result.len(), 1);
    let text = result[0]["message"].as_str().expect("message");
    assert!(text.starts_with("**Job morning-brief**, run of "), "{text}");
    assert!(text.contains(": done\n\n"), "{text}");
    // Model text reaches Mattermost inert: the link is code, never previewed.
    assert!(
        text.ends_with("Today: standup at 9. Agenda at `https://evil.example/x`"),
        "{text}"
    );

    // The next run is independent, and its result goes to the same thread; `bxctl job run`
    // starts it (here the runner, as under bxctl dev: peers.jobs is this uid).
    let out = home.bxctl(&["job", "run", "morning-brief"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("job morning-brief: done"));
    assert_eq!(replies(&gw.state(), &root).len(), 2);
    assert_eq!(roots_with(&gw, "**Job morning-brief**").len(), 1);

    // An ask in a job: its approval is posted to Mattermost, nobody answers, it expires.
    let out = run_job(&home, "watch-page");
    assert_eq!(out.status.code(), Some(1), "a failed run fails its unit");
    assert!(
        !roots_with(&gw, "read_file").is_empty(),
        "the approval card was posted: {:#}",
        gw.state()
    );
    let text = first_result(&gw, "watch-page");
    assert!(text.contains(": FAILED\n\n"), "{text}");
    assert!(
        text.contains(
            "Call 1 (read_file) not approved: nobody answered before the approval expired \
             (approval_expired"
        ),
        "{text}"
    );

    let lines = home.audit_lines();
    let count = |f: &dyn Fn(&AuditLine) -> bool| lines.iter().filter(|l| f(l)).count();
    assert_eq!(
        count(&|l| matches!(l, AuditLine::Event(AuditEvent::JobRunStarted { .. }))),
        3
    );
    assert_eq!(
        count(&|l| matches!(
            l,
            AuditLine::Event(AuditEvent::JobRunEnded {
                ended: RunEnd::Finished,
                ..
            })
        )),
        3
    );
    assert_eq!(
        count(&|l| matches!(l, AuditLine::Decision(r)
            if r.session.as_str().starts_with("job-watch-page-")
                && matches!(r.decision, DecisionRecord::Denied { reason: DenyReason::ApprovalExpired, .. }))),
        1
    );
    // bxctl jobs: each job's schedule, last run and outcome; 1 since a last run failed.
    let out = home.bxctl(&["jobs", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let jobs = listed["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 2, "{listed:#}");
    assert_eq!(jobs[0]["name"], "morning-brief");
    assert_eq!(jobs[0]["schedule"], "*-*-* 07:00:00");
    assert_eq!(jobs[0]["last_outcome"], "done");
    assert!(
        jobs[0]["last_run"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(jobs[1]["last_outcome"], "failed");
    let text = String::from_utf8_lossy(&home.bxctl(&["jobs"]).stdout).into_owned();
    assert!(
        text.contains("morning-brief  schedule *-*-* 07:00:00  last run 20")
            && text.contains("  done  next run "),
        "{text}"
    );
    let out = home.bxctl(&["job", "run", "no-such-job"]);
    assert_eq!(out.status.code(), Some(2));
    let out = home.bxctl(&["job", "run", "watch-page", "--json"]);
    assert_eq!(out.status.code(), Some(1), "a failed run is 1");
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        answer,
        serde_json::json!({"job": "watch-page", "outcome": "failed"})
    );
    home.assert_audit_good();
}

#[test]
fn loopds_jobs_side_takes_one_turn_in_a_new_job_session_only() {
    let home = Home::new("job-loop-side", "");
    add_jobs_peer(&home);
    home.append_config(&job_entry("morning-brief", "brief"));
    let _gw = home.start_gateway(&[OWNER.id], "");
    let agent = home.start_agent(SCRIPT, "");
    let sock = home.root.join("run/jobs-loop/loop.sock");
    let send = |session: Option<&str>| {
        let mut conn = daemon::conn::Conn::connect(&sock).expect("jobs side");
        let msg = proto::Message::ChatSend(proto::chat::ChatSend {
            session: session.map(|s| proto::SessionId::new(s).expect("id")),
            text: "hello".into(),
            cancel_on_hangup: false,
        });
        conn.call(1, msg, |_| {}).expect("answer").msg
    };
    let refused = |m: &proto::Message| {
        matches!(m, proto::Message::Error(e) if e.code == proto::ErrorCode::BadMessage
            && e.detail.contains("one turn in a new job session"))
    };
    // An owner's session (one loopd holds) and no session at all are refused.
    let owner = agent.chat(None, "hello").reply.session;
    assert!(refused(&send(Some(owner.as_str()))));
    assert!(refused(&send(None)));
    assert!(refused(&send(Some("s-made-up"))));
    // A new job-shaped session gets its turn (brokerd denies its calls: no run holds it),
    // and only one.
    let job = "job-morning-brief-0123456789abcdef0123456789abcdef";
    assert!(matches!(send(Some(job)), proto::Message::ChatReply(_)));
    assert!(refused(&send(Some(job))));
}

#[test]
fn the_job_in_docs_jobs_md_is_a_job_this_build_takes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/jobs.md");
    let Ok(text) = std::fs::read_to_string(&path) else {
        assert!(
            std::env::var_os("BOXMAKER_GATE").is_none(),
            "docs/ is missing in the gate"
        );
        return;
    };
    let blocks: Vec<&str> = text
        .split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split_once("```").map(|(b, _)| b))
        .collect();
    assert_eq!(
        blocks.len(),
        3,
        "a [[jobs]] entry, its grant, and the entry delivering to a note"
    );
    let home = Home::new("job-docs", "");
    add_jobs_peer(&home);
    home.append_config(&format!(
        "{}[gateway]\nserver = \"https://chat.example.com\"\nowners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n",
        blocks[0]
    ));
    let config = config::Config::load(&home.config()).expect("the docs' job loads");
    assert_eq!(config.jobs[0].name.as_str(), "morning-brief");
    assert_eq!(config.jobs[0].randomized_delay.as_secs(), 300);
    let grant = proto::Grant::from_toml(blocks[1]).expect("the docs' grant loads");
    assert_eq!(grant.job, Some(config.jobs[0].name.clone()));
    // The same job delivering to a note, with no gateway.
    let home = Home::new("job-docs-note", "");
    add_jobs_peer(&home);
    home.append_config(blocks[2]);
    let config = config::Config::load(&home.config()).expect("the docs' note job loads");
    assert_eq!(
        config.jobs[0].deliver,
        config::Deliver::Note("morning-brief".into())
    );
}

#[test]
fn a_run_past_its_time_limit_fails_and_says_so_however_steadily_the_model_streams() {
    let home = Home::new("job-time", "approval_ttl = \"1s\"");
    add_jobs_peer(&home);
    home.append_config(&(job_entry("slow-job", "be slow") + "time_limit = \"3s\"\n"));
    let gw = home.start_gateway(&[OWNER.id], "");
    let slow = format!(
        "[server]\nn_ctx = 16384\nchunk_chars = 2\n[[rule]]\n[rule.match]\nuser_contains = \
         \"slow\"\n[rule.answer]\ntext = \"{}\"\nchunk_delay_ms = 200\n",
        "ab".repeat(40)
    );
    let _agent = home.start_agent(&slow, "");
    let started = std::time::Instant::now();
    let out = run_job(&home, "slow-job");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 40 chunks 200 ms apart would take 8 s; the run stops at its 3 s.
    assert!(started.elapsed() < std::time::Duration::from_secs(7));
    let text = first_result(&gw, "slow-job");
    assert!(
        text.contains(": FAILED\n\nThe time limit of 3s was reached."),
        "{text}"
    );
}

#[test]
fn a_run_whose_model_cannot_be_reached_fails_and_says_so() {
    let home = Home::new("job-model", "");
    add_jobs_peer(&home);
    home.append_config(&job_entry("morning-brief", "brief me"));
    let gw = home.start_gateway(&[OWNER.id], "");
    let down = "[default]\nerror = { status = 500, message = \"boom\" }\n";
    let _agent = home.start_agent(down, "");
    let out = run_job(&home, "morning-brief");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = first_result(&gw, "morning-brief");
    assert!(
        text.contains(": FAILED\n\nThe model could not be reached: "),
        "{text}"
    );
}
