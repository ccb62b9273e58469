//! Starting a role as systemd does: READY=1 among other datagrams, a child that exits
//! first, and a silent child killed at the timeout.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use supervise::{NotReady, await_ready, spawn_ready};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("daemon-ready-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

/// `sh -c script`.
fn sh(script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]);
    cmd
}

#[test]
fn a_child_that_exits_first_is_reported_without_waiting_out_the_timeout() {
    let d = dir("exits");
    let start = Instant::now();
    let e = spawn_ready(
        &mut sh("exit 3"),
        &d.join("n.sock"),
        Duration::from_secs(20),
    )
    .expect_err("not ready");
    assert!(
        matches!(e, NotReady::Exited(s) if s.code() == Some(3)),
        "{e}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_silent_child_times_out_and_is_killed() {
    let d = dir("silent");
    let pid_file = d.join("pid");
    let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
    let e = spawn_ready(&mut sh(&script), &d.join("n.sock"), Duration::from_secs(1))
        .expect_err("not ready");
    assert!(matches!(e, NotReady::Timeout(_)), "{e}");
    let pid = std::fs::read_to_string(&pid_file).expect("pid");
    // Killed and reaped: no such process any more.
    assert!(
        !Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "the child {} still runs",
        pid.trim()
    );
}

#[test]
fn ready_is_seen_among_other_datagrams() {
    let d = dir("ready");
    let notify = d.join("n.sock");
    let sock = UnixDatagram::bind(&notify).expect("bind");
    let sender = UnixDatagram::unbound().expect("sender");
    sender.send_to(b"STATUS=starting", &notify).expect("send");
    sender
        .send_to(b"STATUS=up\nREADY=1", &notify)
        .expect("send");
    await_ready(&sock, Duration::from_secs(5), None).expect("ready");
}
