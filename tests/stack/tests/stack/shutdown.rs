//! Stopping never strands a call: SIGTERM while a call waits for the owner denies it at
//! once (`shutting_down`), audited after its `approval_requested`, answered to the caller,
//! shown on the Mattermost card, and brokerd exits without waiting out its drain.

use std::time::{Duration, Instant};

use proto::{AuditEvent, AuditLine, DecisionRecord, DenyReason, ToolResponse};
use stack::{Daemon, Home, OWNER, post_id, read_grant, response};

/// brokerd's drain is 20 s: a call stranded until then would take that long.
const PROMPT: Duration = Duration::from_secs(8);

fn terminate(daemon: &mut Daemon) -> Instant {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(daemon.child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    Instant::now()
}

/// Waits for the daemon to exit, at most [`PROMPT`]; its exit code.
fn exited(daemon: &mut Daemon, since: Instant) -> Option<i32> {
    let status = stack::wait_until("brokerd to exit", PROMPT, || {
        daemon.child.try_wait().ok().flatten()
    });
    assert!(
        since.elapsed() < PROMPT,
        "brokerd took {:?} to stop: {}",
        since.elapsed(),
        daemon.log()
    );
    status.code()
}

/// The approval requested, then the call's decision: a `shutting_down` denial after it.
fn assert_denied_after_request(home: &Home, approval: Option<&str>) {
    let lines = home.audit_lines();
    let asked = lines
        .iter()
        .position(|l| match l {
            AuditLine::Event(AuditEvent::ApprovalRequested { approval: a, .. }) => {
                approval.is_none_or(|want| a == want)
            }
            _ => false,
        })
        .expect("approval_requested in the audit");
    let decided = lines[asked..].iter().any(|l| {
        matches!(
            l,
            AuditLine::Decision(r) if matches!(
                &r.decision,
                DecisionRecord::Denied { reason: DenyReason::ShuttingDown, grant: Some(g), .. }
                    if g == "inbox"
            )
        )
    });
    assert!(
        decided,
        "no shutting_down decision after the request: {lines:#?}"
    );
    home.assert_audit_good();
}

#[test]
fn sigterm_denies_a_call_waiting_for_the_owner_at_once() {
    let home = Home::new("stop-ask", "");
    let dir = home.files("inbox", &[("mail.txt", "hello")]);
    home.write_grant("inbox", &read_grant("ask", &dir, ""));
    let mut brokerd = home.start();
    let (approval, waiting) =
        crate::approvals::ask(&home, 1, format!("{}/mail.txt", dir.display()));
    let since = terminate(&mut brokerd);
    let frames = waiting.join().expect("request thread");
    assert!(
        matches!(
            response(&frames),
            ToolResponse::Denied {
                reason: DenyReason::ShuttingDown,
                ..
            }
        ),
        "{frames:?}"
    );
    assert!(
        since.elapsed() < PROMPT,
        "answered after {:?}",
        since.elapsed()
    );
    assert_eq!(exited(&mut brokerd, since), Some(0));
    assert_denied_after_request(&home, Some(&approval));
}

/// loopd's session logs (`sessions/<id>/<epoch>.jsonl`): the tool results as the model
/// read them.
fn session_logs(home: &Home) -> String {
    let sessions = std::fs::read_dir(home.root.join("home/sessions")).expect("sessions");
    sessions
        .filter_map(|s| std::fs::read_dir(s.ok()?.path()).ok())
        .flatten()
        .filter_map(|f| std::fs::read_to_string(f.ok()?.path()).ok())
        .collect()
}

#[test]
fn sigterm_while_a_card_waits_on_mattermost_shows_the_denial_on_the_card() {
    let (home, gw, mut agent) = crate::gateway_approvals::setup("stop-gw");
    let root = gw.post(OWNER, "read my mail", None);
    let a = post_id(&crate::gateway_approvals::approval_post(&gw));

    let brokerd = &mut agent.daemons[1];
    let since = terminate(brokerd);
    assert_eq!(exited(brokerd, since), Some(0));
    let shown = gw.wait_post("the card shows the denial", &a, |m| {
        m.ends_with(":no_entry: **Denied**: brokerd stopped before anyone answered.")
    });
    assert!(
        !shown["message"]
            .as_str()
            .is_some_and(|m| m.contains("React with")),
        "{shown}"
    );
    // loopd got the typed denial and gave it to the model, which answered the owner.
    gw.wait_reply(&root, "That was refused.");
    assert!(
        session_logs(&home).contains("denied by the owner's policy (shutting_down)"),
        "{}",
        session_logs(&home)
    );
    assert_denied_after_request(&home, None);
}
