//! The watchdog: each role given WATCHDOG_USEC and WATCHDOG_PID (as systemd does for
//! `WatchdogSec=`) pings WATCHDOG=1 on the notify socket; brokerd stops pinging while its
//! audit writer is stuck (an fdatasync held up with strace), gatewayd while saving its state
//! is, so systemd would restart them.

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stack::{Home, OWNER, STRANGER, read_grant};

/// 200 ms: a ping every 100 ms.
const USEC: u64 = 200_000;

/// When each WATCHDOG=1 arrived on `sock` during `span`.
fn pings(sock: &UnixDatagram, span: Duration) -> Vec<Instant> {
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let end = Instant::now() + span;
    let mut at = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        if let Ok(n) = sock.recv(&mut buf)
            && String::from_utf8_lossy(&buf[..n])
                .lines()
                .any(|l| l == "WATCHDOG=1")
        {
            at.push(Instant::now());
        }
    }
    at
}

/// The longest time between two pings (or from the start or to the end of `span`).
fn longest_gap(sock: &UnixDatagram, span: Duration) -> Duration {
    let start = Instant::now();
    let at = pings(sock, span);
    let mut marks = vec![start];
    marks.extend(at);
    marks.push(Instant::now());
    marks
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}

/// strace attached to a daemon, holding up each of its fdatasync and fsync calls for 3 s:
/// whatever thread writes durable state stays stuck in it, holding what it holds. (Or, with
/// [`Stall::inject`], another fault injected into them.)
pub(crate) struct Stall {
    strace: std::process::Child,
    log: std::path::PathBuf,
}

impl Stall {
    fn fsyncs(home: &Home, daemon: &stack::Daemon) -> Self {
        Self::inject(home, daemon, "fdatasync,fsync:delay_enter=3000000")
    }

    /// strace attached to every thread of `daemon`, injecting `inject` (strace's
    /// `-e inject=` syntax) into its fdatasync and fsync calls.
    pub(crate) fn inject(home: &Home, daemon: &stack::Daemon, inject: &str) -> Self {
        let pid = daemon.child.id();
        let log = home.root.join(format!("strace-{pid}.err"));
        let strace = Command::new("strace")
            .args([
                "-f",
                "-qq",
                "-o",
                "/dev/null",
                "-e",
                "trace=fdatasync,fsync",
            ])
            .args(["-e", &format!("inject={inject}"), "-p"])
            .arg(pid.to_string())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("strace");
        // strace has attached once the tracer shows in the status of every thread the
        // daemon has (a thread it has not reached yet would sync unharmed: seen under load).
        let traced = stack::poll_until(Duration::from_secs(10), || {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
            let mut all = true;
            for task in tasks.flatten() {
                let status = std::fs::read_to_string(task.path().join("status"));
                all &= status.is_ok_and(|s| {
                    s.lines()
                        .any(|l| l.starts_with("TracerPid:") && !l.ends_with("\t0"))
                });
            }
            all.then_some(())
        });
        assert!(traced.is_some(), "strace did not attach to every thread");
        Self { strace, log }
    }

    pub(crate) fn detach(&mut self) {
        let _ = self.strace.kill();
        let _ = self.strace.wait();
    }

    /// Detaches, and asserts that the longest gap between pings meanwhile was `gap`, long
    /// enough to say the pings stopped (they come every 100 ms otherwise).
    fn end(mut self, gap: Duration) {
        self.detach();
        assert!(
            gap >= Duration::from_millis(1500),
            "pings went on while the work loop was stuck (longest gap {gap:?}): {}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }
}

#[test]
fn every_role_pings_the_watchdog_it_is_given() {
    let home = Home::new("watchdog", "");
    let (_mm, _) = home.fake_mattermost(&[OWNER.id], "");
    for role in ["brokerd", "loopd", "inferproxy", "gatewayd"] {
        let (mut daemon, sock) = home.watched(role, USEC);
        let seen = pings(&sock, Duration::from_millis(600)).len();
        assert!(
            seen >= 3,
            "{role}: {seen} pings in 600 ms: {}",
            daemon.log()
        );
        daemon.kill();
    }
}

#[test]
fn a_watchdog_pid_of_another_process_is_not_pinged() {
    let home = Home::new("watchdog-pid", "");
    let mut cmd = Command::new(stack::bin("brokerd"));
    cmd.arg("--config")
        .arg(home.config())
        .env("WATCHDOG_USEC", USEC.to_string())
        .env("WATCHDOG_PID", "1");
    let (_brokerd, sock) = stack::Daemon::spawn_notified(cmd, &home.root);
    assert!(pings(&sock, Duration::from_millis(500)).is_empty());
}

#[test]
fn brokerd_stops_pinging_while_its_audit_writer_is_stuck() {
    if !stack::have("strace") {
        return;
    }
    let home = Home::new("watchdog-stuck", "");
    let notes = home.files("notes", &[("n.md", "note")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let (brokerd, sock) = home.watched("brokerd", USEC);
    assert!(
        longest_gap(&sock, Duration::from_millis(500)) < Duration::from_millis(400),
        "no steady pings before: {}",
        brokerd.log()
    );
    let stall = Stall::fsyncs(&home, &brokerd);
    let loop_sock = home.loop_sock();
    let path = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let call = std::thread::spawn(move || stack::tool(&loop_sock, "s-1", 1, "read_file", &path));
    let gap = longest_gap(&sock, Duration::from_millis(2500));
    let frames = call.join().expect("the call");
    stall.end(gap);
    assert!(matches!(
        stack::response(&frames),
        proto::ToolResponse::Result { .. }
    ));
    // Free again: the pings resume.
    assert!(
        longest_gap(&sock, Duration::from_millis(600)) < Duration::from_millis(400),
        "the pings did not resume: {}",
        brokerd.log()
    );
}

#[test]
fn gatewayd_stops_pinging_while_saving_its_state_is_stuck() {
    if !stack::have("strace") {
        return;
    }
    let home = Home::new("watchdog-gateway", "");
    let (_mm, addr) = home.fake_mattermost(&[OWNER.id], "");
    let (gatewayd, sock) = home.watched("gatewayd", USEC);
    let gw = stack::Gateway {
        addr,
        daemons: Vec::new(),
    };
    gw.wait("the WebSocket connected", |s| s["live"].as_u64() >= Some(1));
    assert!(
        longest_gap(&sock, Duration::from_millis(500)) < Duration::from_millis(400),
        "no steady pings before: {}",
        gatewayd.log()
    );
    let stall = Stall::fsyncs(&home, &gatewayd);
    // A stranger's post is counted as ignored and the state saved, under its lock.
    gw.post(STRANGER, "hello?", None);
    let gap = longest_gap(&sock, Duration::from_millis(2500));
    stall.end(gap);
    assert!(
        longest_gap(&sock, Duration::from_millis(600)) < Duration::from_millis(400),
        "the pings did not resume: {}",
        gatewayd.log()
    );
    assert_eq!(home.gateway_state()["ignored"], 1);
}
