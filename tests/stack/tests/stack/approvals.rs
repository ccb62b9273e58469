//! `ask` grants: the owner's approval through bxctl, expiry, reuse, changed requests, the cap.

use std::path::Path;
use std::time::{Duration, Instant};

use daemon::conn::Conn;
use proto::approval::{Empty, Refusal};
use proto::{AuditEvent, AuditLine, DecisionRecord, DenyReason, Envelope, Message, ToolResponse};
use stack::{Home, read_grant, request, response};

/// Starts a request in a thread; returns the pending approval id and the thread.
pub(crate) fn ask(
    home: &Home,
    call: u64,
    path: String,
) -> (String, std::thread::JoinHandle<Vec<Envelope>>) {
    let sock = home.loop_sock();
    let arguments = format!(r#"{{"path":"{path}"}}"#);
    let witness = stack::witnessed(&home.witness_sock(), "read_file", &arguments);
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let mut conn = Conn::connect(&sock).expect("connect");
        let msg = Message::ToolRequest(proto::ToolRequest {
            session: proto::SessionId::new("s-1").expect("id"),
            call: proto::CallId(call),
            tool: "read_file".into(),
            arguments,
            witness: Some(witness),
        });
        let mut frames = Vec::new();
        let last = conn
            .call(call, msg, |e| {
                frames.push(e.clone());
                let _ = tx.send(e.clone());
            })
            .expect("answer");
        frames.push(last);
        frames
    });
    let pending = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("pending frame");
    assert!(!pending.r#final, "pending_approval is never final");
    let Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) = pending.msg else {
        panic!("{pending:?}")
    };
    assert_eq!(approval.len(), 32, "128 bits as hex");
    (approval, handle)
}

fn setup(name: &str, broker: &str) -> (Home, std::path::PathBuf) {
    let home = Home::new(name, broker);
    let dir = home.files("inbox", &[("mail.txt", "hello")]);
    home.write_grant("inbox", &read_grant("ask", &dir, ""));
    (home, dir)
}

fn file(dir: &Path) -> String {
    format!("{}/mail.txt", dir.display())
}

#[test]
fn ask_then_approve_with_bxctl_runs_the_call_and_records_the_approver() {
    let (home, dir) = setup("approve", "");
    let _d = home.start();
    let (approval, waiting) = ask(&home, 1, file(&dir));
    let list = home.bxctl(&["approvals"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        text.contains(&approval) && text.contains("read_file"),
        "{text}"
    );
    let out = home.bxctl(&["approve", &approval]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let frames = waiting.join().expect("request thread");
    assert!(
        matches!(response(&frames), ToolResponse::Result { content, .. } if content == "hello")
    );
    let me = nix::unistd::getuid().as_raw();
    let approved = home.audit_lines().into_iter().find_map(|l| match l {
        AuditLine::Decision(r) => match r.decision {
            DecisionRecord::Approved { approver, .. } => Some(approver),
            _ => None,
        },
        _ => None,
    });
    assert!(
        approved
            .as_deref()
            .is_some_and(|a| a.starts_with(&format!("uid {me}"))),
        "{approved:?}"
    );

    // The same approval again is refused and audited.
    let again = home.bxctl(&["approve", &approval]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stdout).contains("refused: already_used"));
    assert!(home.audit_lines().iter().any(|l| matches!(
        l,
        AuditLine::Event(AuditEvent::ApprovalRefused {
            refusal: Refusal::AlreadyUsed,
            ..
        })
    )));
    home.assert_audit_good();
}

#[test]
fn ask_then_deny_is_approval_refused() {
    let (home, dir) = setup("deny", "");
    let _d = home.start();
    let (approval, waiting) = ask(&home, 1, file(&dir));
    assert!(home.bxctl(&["deny", &approval]).status.success());
    let frames = waiting.join().expect("thread");
    assert!(matches!(
        response(&frames),
        ToolResponse::Denied {
            reason: DenyReason::ApprovalRefused,
            ..
        }
    ));
    home.assert_audit_good();
}

#[test]
fn an_unanswered_approval_expires_and_a_late_answer_is_refused() {
    let (home, dir) = setup("expire", "approval_ttl = \"1s\"\n");
    let _d = home.start();
    let start = Instant::now();
    let (approval, waiting) = ask(&home, 1, file(&dir));
    let frames = waiting.join().expect("thread");
    assert!(start.elapsed() >= Duration::from_millis(900));
    assert!(matches!(
        response(&frames),
        ToolResponse::Denied {
            reason: DenyReason::ApprovalExpired,
            ..
        }
    ));
    let late = home.bxctl(&["approve", &approval]);
    assert_eq!(late.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&late.stdout).contains("refused: expired"));
    assert!(home.audit_lines().iter().any(|l| matches!(
        l,
        AuditLine::Event(AuditEvent::ApprovalRefused {
            refusal: Refusal::Expired,
            ..
        })
    )));
    home.assert_audit_good();
}

#[test]
fn past_the_cap_an_ask_is_denied_at_once() {
    let (home, dir) = setup("cap", "max_pending_approvals = 1\n");
    let _d = home.start();
    let (first, waiting) = ask(&home, 1, file(&dir));
    // A second session, so it is not serialised behind the first one's pending call.
    let mut conn = Conn::connect(&home.loop_sock()).expect("connect");
    let frames = request(
        &mut conn,
        "s-2",
        2,
        "read_file",
        &format!(r#"{{"path":"{}"}}"#, file(&dir)),
    );
    assert!(matches!(
        response(&frames),
        ToolResponse::Denied {
            reason: DenyReason::TooManyPendingApprovals,
            ..
        }
    ));
    let mut admin = Conn::connect(&home.admin_sock()).expect("admin");
    let listing = admin
        .call(1, Message::ApprovalList(Empty {}), |_| {})
        .expect("list");
    let Message::ApprovalListing(l) = listing.msg else {
        panic!("{listing:?}")
    };
    assert_eq!(l.pending.len(), 1);
    assert!(home.bxctl(&["deny", &first]).status.success());
    drop(waiting.join());
    home.assert_audit_good();
}

#[test]
fn a_reload_never_changes_a_call_in_flight() {
    let (home, dir) = setup("inflight", "");
    let d = home.start();
    let (approval, waiting) = ask(&home, 1, file(&dir));
    // The owner withdraws the grant while the call waits for approval.
    std::fs::remove_file(home.root.join("grants/inbox.toml")).expect("rm grant");
    home.reload(&d, 2);
    // The call in flight keeps the snapshot it started with…
    assert!(home.bxctl(&["approve", &approval]).status.success());
    assert!(matches!(
        response(&waiting.join().expect("thread")),
        ToolResponse::Result { .. }
    ));
    // …and a later call gets the new one.
    let mut conn = Conn::connect(&home.loop_sock()).expect("connect");
    let frames = request(
        &mut conn,
        "s-1",
        2,
        "read_file",
        &format!(r#"{{"path":"{}"}}"#, file(&dir)),
    );
    assert!(matches!(
        response(&frames),
        ToolResponse::Denied {
            reason: DenyReason::NoGrant,
            ..
        }
    ));
    home.assert_audit_good();
}

#[test]
fn calls_of_one_session_are_decided_one_at_a_time() {
    let home = Home::new("serial", "");
    let secrets = home.files("secrets", &[("key.txt", "hunter2")]);
    let notes = home.files("notes", &[("n.md", "note")]);
    // Reading the key needs the owner and makes the session secret; the notes grant
    // applies only up to private.
    home.write_grant(
        "inbox",
        &read_grant("ask", &secrets, "result_class = \"secret\""),
    );
    home.write_grant(
        "notes",
        &read_grant("auto", &notes, "")
            .replace("max_taint = \"secret\"", "max_taint = \"private\""),
    );
    let _d = home.start();
    let (approval, first) = ask(&home, 1, format!("{}/key.txt", secrets.display()));
    // A second call of the same session, sent while the first waits: it must be decided
    // only after the first has raised the session to secret.
    let sock = home.loop_sock();
    let note = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let second = std::thread::spawn(move || {
        let mut conn = Conn::connect(&sock).expect("connect");
        request(&mut conn, "s-1", 2, "read_file", &note)
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !second.is_finished(),
        "the second call was decided while the first waited"
    );
    assert!(home.bxctl(&["approve", &approval]).status.success());
    assert!(matches!(
        response(&first.join().expect("first")),
        ToolResponse::Result {
            class: proto::DataClass::Secret,
            ..
        }
    ));
    assert!(matches!(
        response(&second.join().expect("second")),
        ToolResponse::Denied {
            reason: DenyReason::TaintTooHigh,
            ..
        }
    ));
    home.assert_audit_good();
}
