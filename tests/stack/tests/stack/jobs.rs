//! Job sessions against the real brokerd: a runner registers its run on jobs.sock and
//! gets a session that only its job's grants serve, and only while the run lasts. Here
//! every process has one uid (as under `bxctl dev`), so the runner's claim names the job;
//! the systemd tier checks that a job's user cannot register as another job.

use std::path::Path;
use std::time::Duration;

use daemon::conn::Conn;
use proto::approval::SessionQuery;
use proto::job::{JobFinish, JobOutcome, JobRegister, RunEnd};
use proto::{
    AuditEvent, AuditLine, DataClass, DecisionRecord, DenyReason, ErrorCode, JobName, Message,
    SessionId, ToolResponse,
};
use stack::{Home, poll_until, read_grant, response, tool};

/// The jobs sockets and `peers.jobs` (this uid) in `home`'s config.
pub fn add_jobs_peer(home: &Home) {
    let config = std::fs::read_to_string(home.config()).expect("config");
    let r = home.root.display();
    let uid = nix::unistd::getuid().as_raw();
    let mut sockets = String::from("[sockets]\n");
    for side in ["jobs-broker", "jobs-loop", "jobs-gateway"] {
        std::fs::create_dir_all(home.root.join("run").join(side)).expect("mkdir");
        let key = side.replace('-', "_");
        sockets.push_str(&format!("{key} = \"{r}/run/{side}\"\n"));
    }
    let config = config
        .replace("[sockets]\n", &sockets)
        .replace("[peers]\n", &format!("[peers]\njobs = {{ uid = {uid} }}\n"));
    std::fs::write(home.config(), config).expect("config");
}

/// A `[[jobs]]` entry delivering to Mattermost.
pub fn job_entry(name: &str, prompt: &str) -> String {
    format!(
        "[[jobs]]\nname = \"{name}\"\nschedule = \"*-*-* 07:00:00\"\nprompt = \"{prompt}\"\n\
         deliver = \"mattermost\"\n"
    )
}

/// A home with the jobs sockets, one job (`morning-brief`) and a gateway for its delivery
/// (nothing listens there: these tests deliver nothing).
pub fn jobs_home(name: &str) -> Home {
    let home = Home::new(name, "");
    add_jobs_peer(&home);
    home.append_config(&format!(
        "{}[gateway]\nserver = \"http://127.0.0.1:9\"\nowners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n",
        job_entry("morning-brief", "Summarise today's notes.")
    ));
    home
}

fn jobs_sock(home: &Home) -> std::path::PathBuf {
    home.root.join("run/jobs-broker/jobs.sock")
}

/// Registers a run of `job`: the open connection (the run lasts while it does) and the
/// session, or the refusal's text.
pub fn register(home: &Home, job: &str) -> Result<(Conn, SessionId), String> {
    let mut conn = Conn::connect(&jobs_sock(home)).expect("connect jobs side");
    let job = JobName::new(job).expect("name");
    let reply = conn
        .call(
            1,
            Message::JobRegister(JobRegister { job: job.clone() }),
            |_| {},
        )
        .expect("reply");
    match reply.msg {
        Message::JobRegistered(r) => {
            assert_eq!(r.job, job);
            Ok((conn, r.session))
        }
        Message::Error(e) => {
            assert_eq!(e.code, ErrorCode::Refused, "{}", e.detail);
            Err(e.detail)
        }
        other => panic!("not a registration: {other:?}"),
    }
}

fn read(home: &Home, session: &str, call: u64, path: &Path) -> ToolResponse {
    let args = format!(r#"{{"path":"{}"}}"#, path.display());
    response(&tool(&home.loop_sock(), session, call, "read_file", &args)).clone()
}

fn denied(r: &ToolResponse) -> Option<DenyReason> {
    match r {
        ToolResponse::Denied { reason, .. } => Some(*reason),
        _ => None,
    }
}

#[test]
fn a_job_session_gets_its_jobs_grants_only_and_only_while_its_run_lasts() {
    let home = jobs_home("job-grants");
    let notes = home.files("notes", &[("today.md", "- standup at 9\n")]);
    let private = home.files("private", &[("diary.md", "dear diary\n")]);
    home.write_grant(
        "brief-notes",
        &read_grant("auto", &notes, "job = \"morning-brief\""),
    );
    home.write_grant("owner-private", &read_grant("auto", &private, ""));
    let _brokerd = home.start();

    let (mut run, session) = register(&home, "morning-brief").expect("registered");
    let s = session.as_str();
    assert!(s.starts_with("job-morning-brief-"), "{s}");
    // The job's grant serves its run; the ordinary grant does not.
    assert!(matches!(
        read(&home, s, 1, &notes.join("today.md")),
        ToolResponse::Result { .. }
    ));
    assert_eq!(
        denied(&read(&home, s, 2, &private.join("diary.md"))),
        Some(DenyReason::NoGrant)
    );
    // An id loopd minted gets the ordinary grants, never the job's.
    assert_eq!(
        denied(&read(&home, "s-2026-09-17-abc", 1, &notes.join("today.md"))),
        Some(DenyReason::NoGrant)
    );
    assert!(matches!(
        read(&home, "s-2026-09-17-abc", 2, &private.join("diary.md")),
        ToolResponse::Result { .. }
    ));
    // A job-shaped id brokerd did not mint gets nothing.
    let made_up = "job-morning-brief-00000000000000000000000000000000";
    assert_eq!(
        denied(&read(&home, made_up, 1, &notes.join("today.md"))),
        Some(DenyReason::JobNotRunning)
    );
    // No second run of the job while this one lasts.
    let overlap = register(&home, "morning-brief").expect_err("overlap");
    assert!(overlap.contains("in progress"), "{overlap}");
    // The job session started private and trusted; its read raised the flag, durably.
    let info = session_info(&home, &session);
    assert_eq!((info.0, info.1), (DataClass::Private, true));

    let finish = Message::JobFinish(JobFinish {
        outcome: JobOutcome::Done,
    });
    let done = run.call(2, finish, |_| {}).expect("finish");
    assert!(matches!(done.msg, Message::JobFinished(_)), "{done:?}");
    // The finished run's id gets nothing, not even what the job's grant allowed.
    assert_eq!(
        denied(&read(&home, s, 3, &notes.join("today.md"))),
        Some(DenyReason::JobNotRunning)
    );

    let lines = home.audit_lines();
    let started = lines.iter().any(|l| {
        matches!(l, AuditLine::Event(AuditEvent::JobRunStarted { job, session: x, .. })
            if job.as_str() == "morning-brief" && x == &session)
    });
    let ended = lines.iter().any(|l| {
        matches!(l, AuditLine::Event(AuditEvent::JobRunEnded { ended: RunEnd::Finished, session: x, .. })
            if x == &session)
    });
    let refused = lines.iter().any(|l| {
        matches!(l, AuditLine::Event(AuditEvent::JobRunRefused { reason, .. })
            if reason.contains("in progress"))
    });
    let after = lines.iter().rev().find_map(|l| match l {
        AuditLine::Decision(r) if r.session == session => Some(r.decision.clone()),
        _ => None,
    });
    assert!(started && ended && refused, "{lines:#?}");
    assert!(
        matches!(
            after,
            Some(DecisionRecord::Denied {
                reason: DenyReason::JobNotRunning,
                ..
            })
        ),
        "{after:?}"
    );
    home.assert_audit_good();
}

fn session_info(home: &Home, session: &SessionId) -> (DataClass, bool) {
    let mut conn = Conn::connect(&home.admin_sock()).expect("admin");
    let q = Message::SessionQuery(SessionQuery {
        session: session.clone(),
    });
    match conn.call(1, q, |_| {}).expect("info").msg {
        Message::SessionInfo(i) => (i.taint, i.untrusted),
        other => panic!("not session info: {other:?}"),
    }
}

#[test]
fn a_run_ends_when_its_runner_goes_away_and_an_unknown_job_is_refused() {
    let home = jobs_home("job-gone");
    let notes = home.files("notes", &[("today.md", "x\n")]);
    home.write_grant(
        "brief-notes",
        &read_grant("auto", &notes, "job = \"morning-brief\""),
    );
    let _brokerd = home.start();
    let (run, session) = register(&home, "morning-brief").expect("registered");
    drop(run);
    let gone = poll_until(Duration::from_secs(10), || {
        home.audit_lines().iter().any(|l| {
            matches!(l, AuditLine::Event(AuditEvent::JobRunEnded { ended: RunEnd::Disconnected, session: x, .. })
                if x == &session)
        })
    });
    assert!(gone.is_some(), "the run did not end with its connection");
    assert_eq!(
        denied(&read(&home, session.as_str(), 1, &notes.join("today.md"))),
        Some(DenyReason::JobNotRunning)
    );
    // The next run is a new session, independent of the last.
    let (_run, next) = register(&home, "morning-brief").expect("a new run");
    assert_ne!(next, session);
    assert!(matches!(
        read(&home, next.as_str(), 1, &notes.join("today.md")),
        ToolResponse::Result { .. }
    ));
    let unknown = register(&home, "watch-page").expect_err("not configured");
    assert!(
        unknown.contains("no job watch-page is configured"),
        "{unknown}"
    );
}
