//! A failed `bxctl verify --alert` reaches the owner's channel (issue 27 point 1,
//! docs/verify.md, docs/decisions.md V18): brokerd takes the `FAIL` lines on its admin side
//! only, within bounds, audits them with who handed them over, and forwards them to gatewayd,
//! which posts them inert with nothing to answer; a run that passes sends nothing.

use std::os::unix::net::UnixListener;
use std::sync::mpsc;
use std::time::Duration;

use daemon::conn::Conn;
use proto::alert::{AlertOutcome, MAX_LINE_BYTES, MAX_LINES, VerifyAlert, VerifyPost};
use proto::gateway::ApprovalHeard;
use proto::{AuditEvent, AuditLine, Envelope, ErrorCode, Message};
use stack::{BOT, Home, OWNER, posts};

const SCRIPT: &str = r#"
[server]
n_ctx = 8192
total_slots = 2

[default]
text = "Here is one short sentence for the prompt cache measure."
"#;

const LINE: &str = "FAIL  state  audit: audit chain BROKEN (2026-12-02.jsonl line 2)";

fn alert(lines: Vec<String>) -> Message {
    Message::VerifyAlert(VerifyAlert { lines })
}

/// One request on `sock` and its answer.
fn ask(sock: &std::path::Path, msg: Message) -> Message {
    let mut conn = Conn::connect(sock).expect("connect");
    conn.call(1, msg, |_| {}).expect("answer").msg
}

fn refusal(m: &Message) -> (ErrorCode, String) {
    match m {
        Message::Error(e) => (e.code, e.detail.clone()),
        other => panic!("not an error: {other:?}"),
    }
}

/// The `verify_alerted` lines of the audit log.
fn audited(home: &Home) -> Vec<(String, Vec<String>, AlertOutcome)> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Event(AuditEvent::VerifyAlerted {
                by, lines, outcome, ..
            }) => Some((by, lines, outcome)),
            _ => None,
        })
        .collect()
}

/// A stand-in for gatewayd on brokerd's link: it answers every wait with nothing heard and
/// sends each `verify_post` it is given to `posted`.
fn fake_gatewayd(home: &Home, posted: mpsc::Sender<VerifyPost>) {
    let listener = UnixListener::bind(home.root.join("run/broker-gateway/gateway.sock"))
        .expect("gateway.sock");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut conn = Conn::new(stream, Duration::from_secs(60), Duration::from_secs(10));
            while let Ok(env) = conn.read() {
                let reply = match env.msg {
                    Message::ApprovalWait(w) => {
                        std::thread::sleep(Duration::from_millis(u64::from(w.wait_ms.min(300))));
                        Message::ApprovalHeard(ApprovalHeard {
                            first: 1,
                            answers: Vec::new(),
                            version: None,
                        })
                    }
                    Message::VerifyPost(p) => {
                        let _ = posted.send(p);
                        Message::VerifyPosted(proto::alert::VerifyPosted {
                            post: "fakepost".into(),
                        })
                    }
                    other => panic!("the fake gatewayd got {}", other.kind()),
                };
                if conn.write(&Envelope::last(env.id, reply)).is_err() {
                    break;
                }
            }
        }
    });
}

#[test]
fn brokerd_takes_an_alert_on_its_admin_side_only_within_bounds_audits_and_forwards_it() {
    let home = Home::new("valert-broker", "");
    std::fs::write(home.root.join("mm-token"), "t\n").expect("token");
    home.append_config(&format!(
        "[gateway]\nserver = \"http://127.0.0.1:9\"\ntoken_file = \"{}/mm-token\"\n\
         owners = [\"{}\"]\nchannel = \"{}\"\n",
        home.root.display(),
        OWNER.id,
        stack::CHANNEL
    ));
    let _d = home.start();
    let admin = home.admin_sock();
    // Out of bounds: a typed refusal each, nothing audited, and brokerd serves on.
    for (lines, said) in [
        (Vec::new(), "an alert has at least one line".to_owned()),
        (
            vec![LINE.to_owned(); MAX_LINES + 1],
            format!("{} lines: an alert has at most {MAX_LINES}", MAX_LINES + 1),
        ),
        (
            vec![LINE.to_owned(), "x".repeat(MAX_LINE_BYTES + 1)],
            format!(
                "line 2 has {} bytes: a line has at most {MAX_LINE_BYTES}",
                MAX_LINE_BYTES + 1
            ),
        ),
        (
            vec![format!("{LINE}\nok    state  audit: fine")],
            "line 1 breaks the line: each is one line".to_owned(),
        ),
    ] {
        let (code, detail) = refusal(&ask(&admin, alert(lines)));
        assert_eq!(
            (code, detail.as_str()),
            (ErrorCode::AlertRefused, said.as_str())
        );
    }
    // Not on the other sides: loopd's, and the chat side's.
    for sock in [
        home.loop_sock(),
        home.root.join("run/chat-broker/broker.sock"),
    ] {
        let (code, _) = refusal(&ask(&sock, alert(vec![LINE.into()])));
        assert_eq!(code, ErrorCode::ForbiddenKind, "{}", sock.display());
    }
    assert!(audited(&home).is_empty());
    // gatewayd is not there yet: queued, and posted once the link is up.
    let Message::VerifyAlerted(first) = ask(&admin, alert(vec![LINE.into()])) else {
        panic!("not taken");
    };
    assert_eq!((first.outcome, first.next), (AlertOutcome::Queued, None));
    // At most one waits: another meanwhile is held back, named after the one that waits.
    let Message::VerifyAlerted(waits) = ask(&admin, alert(vec!["FAIL  model  reach: y".into()]))
    else {
        panic!("not taken");
    };
    assert_eq!(
        (waits.outcome, waits.next, waits.waiting),
        (AlertOutcome::Held, None, Some(first.seq))
    );
    let (tx, rx) = mpsc::channel();
    fake_gatewayd(&home, tx);
    let post = rx.recv_timeout(Duration::from_secs(20)).expect("forwarded");
    assert_eq!(post.lines, vec![LINE.to_owned()]);
    let uid = nix::unistd::getuid().as_raw();
    assert!(post.by.starts_with(&format!("uid {uid}")), "{}", post.by);
    // A second one within the interval is audited and held back.
    let Message::VerifyAlerted(second) = ask(&admin, alert(vec!["FAIL  model  reach: x".into()]))
    else {
        panic!("not taken");
    };
    // Held either way: within the interval from the post, or (when brokerd has not yet
    // read gatewayd's answer to the post) behind the one still waiting.
    assert_eq!(second.outcome, AlertOutcome::Held);
    assert!(
        second.next.is_some_and(|n| n > post.time) || second.waiting == Some(first.seq),
        "{second:?}"
    );
    assert!(
        rx.recv_timeout(Duration::from_secs(2)).is_err(),
        "held, not forwarded"
    );
    let lines = audited(&home);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0].1, vec![LINE.to_owned()]);
    assert_eq!(lines[0].2, AlertOutcome::Queued);
    assert_eq!(lines[1].2, AlertOutcome::Held);
    assert_eq!(lines[2].2, AlertOutcome::Held);
    assert!(lines.iter().all(|l| l.0 == post.by));
    assert!(matches!(
        ask(&admin, Message::StatusQuery(proto::approval::Empty {})),
        Message::BrokerStatus(_)
    ));
    home.assert_audit_good();
}

#[test]
fn without_the_gateway_an_alert_is_audited_and_not_posted_and_others_are_refused() {
    let home = Home::new("valert-nogw", "");
    let _d = home.start();
    let Message::VerifyAlerted(a) = ask(&home.admin_sock(), alert(vec![LINE.into()])) else {
        panic!("not taken");
    };
    assert_eq!(a.outcome, AlertOutcome::NoGateway);
    assert_eq!(audited(&home).len(), 1);
    drop(_d);
    // A peer the admin side does not admit is refused before it can ask.
    let config = std::fs::read_to_string(home.config()).expect("config");
    let uid = nix::unistd::getuid().as_raw();
    std::fs::write(
        home.config(),
        config.replace(
            &format!("admin = {{ uid = {uid} }}"),
            &format!("admin = {{ uid = {} }}", uid + 4242),
        ),
    )
    .expect("config");
    let _d = home.start();
    let mut conn = Conn::connect(&home.admin_sock()).expect("connect");
    match conn.call(1, alert(vec![LINE.into()]), |_| {}) {
        Err(daemon::conn::CallError::Refused(r)) => assert_eq!(r.code, ErrorCode::Refused),
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(audited(&home).len(), 1);
}

/// The verify alert posts in the channel, as the bot's root posts.
fn verify_posts(state: &serde_json::Value) -> Vec<String> {
    posts(state)
        .into_iter()
        .filter(|p| p["user_id"] == BOT && p["root_id"] == "")
        .filter_map(|p| p["message"].as_str().map(str::to_owned))
        .filter(|m| m.starts_with("**boxmaker: `bxctl verify` failed**"))
        .collect()
}

#[test]
fn a_failing_verify_with_alert_is_posted_in_the_channel_and_a_passing_one_posts_nothing() {
    let home = Home::new("valert-stack", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant("notes-read", &stack::read_grant("auto", &notes, ""));
    let gw = home.start_gateway(&[OWNER.id], "");
    let _agent = home.start_agent(SCRIPT, "");
    for _ in 0..2 {
        assert!(home.bxctl(&["grants", "reload"]).status.success());
    }
    let out = home.bxctl(&["verify", "--only", "state", "--alert"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("alert"), "nothing sent: {stderr}");
    // The first line names the grant; its successor's link then breaks.
    let day = std::fs::read_dir(home.audit_dir())
        .expect("audit dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a day file");
    let bytes = std::fs::read_to_string(&day).expect("day file");
    std::fs::write(&day, bytes.replacen("notes-read", "notes-reaX", 1)).expect("write");
    let out = home.bxctl(&["verify", "--only", "state", "--alert"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.starts_with("verify: alert: 1 FAIL line(s) handed to brokerd, which posts them in the owner's channel (tried again while gatewayd cannot, for up to 24 hours; audit seq "),
        "{stderr}"
    );
    let fail = stdout
        .lines()
        .find(|l| l.starts_with("FAIL  state  audit: audit chain BROKEN ("))
        .expect("the FAIL line")
        .to_owned();
    let state = gw.wait("the verify alert posted", |s| !verify_posts(s).is_empty());
    let got = verify_posts(&state);
    assert_eq!(got.len(), 1, "{got:?}");
    // The line as bxctl printed it, alone in a fenced block.
    assert!(
        got[0].contains(&format!("```\n| {fail}\n```")),
        "{}",
        got[0]
    );
    assert!(got[0].ends_with("Nothing to answer here."), "{}", got[0]);
    let lines = audited(&home);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0].1, vec![fail]);
    assert_eq!(lines[0].2, AlertOutcome::Forwarded);
    // At once again, with --json: standard output stays one line of JSON, the alert is held
    // back (said on standard error) and nothing more is posted.
    let out = home.bxctl(&["verify", "--only", "state", "--alert", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stderr.starts_with(
            "verify: alert: not posted: brokerd took or posted a failed verification less than \
             10 minutes ago; the next may go from "
        ),
        "{stderr}"
    );
    assert_eq!(audited(&home)[1].2, AlertOutcome::Held);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(verify_posts(&gw.state()).len(), 1);
}

/// Mattermost refusing the post loses no alert: brokerd keeps the one it took, holds back
/// another meanwhile (at most one waits), and gatewayd posts it on a later try (every 10 s,
/// like a card).
#[test]
fn an_alert_mattermost_refuses_is_posted_on_a_later_try_and_holds_the_next_back() {
    let home = Home::new("valert-retry", "");
    let gw = home.start_gateway(&[OWNER.id], "");
    let _agent = home.start_agent(SCRIPT, "");
    let fail = serde_json::json!({"after": 0, "posts": 1});
    stack::http(&gw.addr, "POST", "/fake/fail", &fail);
    let admin = home.admin_sock();
    let Message::VerifyAlerted(first) = ask(&admin, alert(vec![LINE.into()])) else {
        panic!("not taken");
    };
    assert!(
        matches!(
            first.outcome,
            AlertOutcome::Forwarded | AlertOutcome::Queued
        ),
        "{first:?}"
    );
    let Message::VerifyAlerted(second) = ask(&admin, alert(vec!["FAIL  model  reach: x".into()]))
    else {
        panic!("not taken");
    };
    assert_eq!(
        (second.outcome, second.waiting),
        (AlertOutcome::Held, Some(first.seq))
    );
    let state = gw.wait("the verify alert posted on a later try", |s| {
        !verify_posts(s).is_empty()
    });
    let got = verify_posts(&state);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains(&format!("\n| {LINE}\n")), "{}", got[0]);
    assert!(!got[0].contains("reach: x"), "{}", got[0]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(verify_posts(&gw.state()).len(), 1, "posted once");
    // The first try was the one Mattermost refused.
    let log = gw.daemons[0].log();
    assert!(log.contains("posting a failed bxctl verify"), "{log}");
}
