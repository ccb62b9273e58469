//! A durable-state failure while serving stops brokerd through `main` (docs/decisions.md
//! B10): the request thread whose audit line could not be synced reports it to the start-up,
//! which returns it; `main` prints it once, with its context, and exits 70.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

use daemon::conn::{CallError, Conn};

use stack::{Home, OWNER, STRANGER, read_grant};

use crate::gateway_approvals::{approval_post, setup};
use crate::watchdog::Stall;

#[test]
fn an_audit_fsync_failing_under_a_request_exits_70_through_main() {
    if !stack::have("strace") {
        return;
    }
    let (home, notes, mut brokerd) = started("fatal-audit", "auto");
    // Witnessed before the fault; the call's first fdatasync is the decision's audit line
    // (which also records the call's use, decisions.md W9), and it fails.
    let witness = note_witness(&home, &notes);
    let mut strace = Stall::inject(&home, &brokerd, "fdatasync:error=EIO");
    // The call is never answered (what it decided is not on disk): brokerd stops instead.
    let call = read_note(&home, &notes, witness);
    let log = exits_70(&mut brokerd, &mut strace, "a request on the loop socket");
    assert!(
        call.join().expect("the call").is_err(),
        "the call was answered: {log}"
    );
}

#[test]
fn a_reload_that_cannot_be_audited_exits_70_through_main() {
    if !stack::have("strace") {
        return;
    }
    let (home, notes, mut brokerd) = started("fatal-reload", "auto");
    let mut strace = Stall::inject(&home, &brokerd, "fdatasync:error=EIO");
    home.write_grant("more", &read_grant("ask", &notes, ""));
    brokerd.hup();
    exits_70(&mut brokerd, &mut strace, "the grants reload");
}

#[test]
fn an_answer_heard_on_mattermost_that_cannot_be_audited_exits_70_through_main() {
    if !stack::have("strace") {
        return;
    }
    let (home, gw, mut agent) = setup("fatal-gateway");
    gw.post(OWNER, "read my mail please", None);
    let card = approval_post(&gw);
    let brokerd = &mut agent.daemons[1];
    let mut strace = Stall::inject(&home, brokerd, "fdatasync:error=EIO");
    // A stranger's answer is refused, and the refusal audited by the gateway link.
    gw.react(STRANGER, &stack::post_id(&card), "+1");
    exits_70(brokerd, &mut strace, "the gateway link");
}

#[test]
fn a_denial_on_sigterm_that_cannot_be_audited_still_exits_70() {
    if !stack::have("strace") {
        return;
    }
    let (home, notes, mut brokerd) = started("fatal-drain", "ask");
    let _call = read_note(&home, &notes, note_witness(&home, &notes));
    stack::wait_for_approval(&home.config());
    let mut strace = Stall::inject(&home, &brokerd, "fdatasync:error=EIO");
    // SIGTERM denies the waiting call; that denial is audited during the drain, and fails.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(brokerd.child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    exits_70(&mut brokerd, &mut strace, "a request on the loop socket");
}

/// Waits for brokerd to exit, and asserts it exited 70 and said why once, through main,
/// naming the audit file, what failed and under what (`by`). Returns its log.
fn exits_70(brokerd: &mut stack::Daemon, strace: &mut Stall, by: &str) -> String {
    let status = stack::poll_until(Duration::from_secs(10), || {
        brokerd.child.try_wait().ok().flatten()
    });
    strace.detach();
    let log = brokerd.log();
    let status = status.unwrap_or_else(|| panic!("brokerd did not stop: {log}"));
    assert_eq!(status.code(), Some(70), "{log}");
    let line = log
        .lines()
        .find(|l| l.starts_with("error: brokerd: fatal"))
        .unwrap_or_else(|| panic!("main did not report it: {log}"));
    assert!(
        line.contains("audit log: cannot fsync")
            && line.contains(".jsonl")
            && line.contains(by)
            && line.contains("Input/output error"),
        "{line}"
    );
    assert_eq!(
        log.lines().filter(|l| l.starts_with("error: ")).count(),
        1,
        "{log}"
    );
    log
}

/// brokerd serving a grant `notes` with `mode` on the directory it returns.
fn started(name: &str, mode: &str) -> (Home, PathBuf, stack::Daemon) {
    let home = Home::new(name, "");
    let notes = home.files("notes", &[("n.md", "note")]);
    home.write_grant("notes", &read_grant(mode, &notes, ""));
    let brokerd = home.start();
    (home, notes, brokerd)
}

fn note_path(notes: &Path) -> String {
    format!(r#"{{"path":"{}/n.md"}}"#, notes.display())
}

/// The model's call reading the note, witnessed as inferproxy would.
fn note_witness(home: &Home, notes: &Path) -> proto::attest::WitnessRef {
    stack::witnessed(&home.witness_sock(), "read_file", &note_path(notes))
}

/// Call 1 of session s-1, reading the note, on its own thread: the answer or why none came.
fn read_note(
    home: &Home,
    notes: &Path,
    witness: proto::attest::WitnessRef,
) -> JoinHandle<Result<proto::Message, CallError>> {
    let loop_sock = home.loop_sock();
    let path = note_path(notes);
    std::thread::spawn(move || {
        let msg = proto::Message::ToolRequest(proto::ToolRequest {
            session: proto::SessionId::new("s-1").expect("session id"),
            call: proto::CallId(1),
            tool: "read_file".into(),
            arguments: path,
            witness: Some(witness),
        });
        let mut conn = Conn::connect(&loop_sock).expect("connect loop side");
        conn.call(1, msg, |_| {}).map(|env| env.msg)
    })
}
