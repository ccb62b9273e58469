//! brokerd's start to READY with a long audit log, beside its start with an empty one, in
//! the same run (issue 23's measure: at most 1.2 times; docs/performance.md). The long log is
//! `stack::long_audit` (a year of day files, 1 GiB by default, cached outside the checkout).
//!
//! Two homes, alike but for the audit log; brokerd starts in each in turn (spawn to READY=1
//! on a test NOTIFY_SOCKET, timed), then stops (SIGTERM, waited for). The first start on the
//! long log is timed apart: it is the one that verifies the whole chain (and, since issue
//! 23, writes the checkpoint the later starts verify from). Each round's ratio is the long
//! log's start over the empty one's; the medians and their range are printed. Beside the
//! wall-clock time, the CPU time brokerd spent until READY (the sum over its threads of
//! `/proc/PID/task/*/schedstat`'s first field, nanoseconds), which the machine's other
//! tenants change less.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p stack --bench start`.
//! Environment: `BENCH_AUDIT_MIB` (default 1024), `BENCH_ROUNDS` (default 31),
//! `BENCH_VERBOSE` (print every round).

use std::io::Write;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use stack::Home;
use stack::long_audit::LongAudit;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spread(v: &[f64]) -> String {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    format!(
        "{:.2} ({:.2} to {:.2})",
        v[v.len() / 2],
        v[0],
        v[v.len() - 1]
    )
}

/// The CPU time the process `pid` has spent, all its threads.
fn cpu(pid: u32) -> Duration {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks");
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split(' ').next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// Starts brokerd in `home`, waits for READY=1 (a full verification of a long log may take
/// a while on a loaded machine), stops it with SIGTERM and waits; the time to READY and the
/// CPU time brokerd spent by then.
fn start(home: &Home) -> (Duration, Duration) {
    let mut cmd = Command::new(stack::bin("brokerd"));
    cmd.arg("--config")
        .arg(home.config())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let notify = home.root.join("notify.sock");
    let began = Instant::now();
    let (child, _sock) = supervise::spawn_ready(&mut cmd, &notify, Duration::from_secs(600))
        .unwrap_or_else(|e| panic!("brokerd did not start: {e}"));
    let took = began.elapsed();
    let used = cpu(child.id());
    stop(child);
    (took, used)
}

fn stop(mut child: Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = child.wait().expect("wait");
    assert!(status.success(), "brokerd stopped with {status}");
}

/// A home whose grants allow reading one notes directory.
fn home(name: &str) -> Home {
    let home = Home::new(name, "");
    let notes = home.files("notes", &[("n.md", "")]);
    home.write_grant("notes-read", &stack::read_grant("auto", &notes, ""));
    home
}

fn main() {
    let mut out = std::io::stdout().lock();
    if !std::env::args().any(|a| a == "--bench") {
        let _ = writeln!(
            out,
            "start bench: run it with `cargo bench -p stack --bench start`"
        );
        return;
    }
    let mib = env_or("BENCH_AUDIT_MIB", 1024);
    let rounds = env_or("BENCH_ROUNDS", 31);
    let verbose = std::env::var_os("BENCH_VERBOSE").is_some();
    let made = Instant::now();
    let log = LongAudit::cached(mib);
    let _ = writeln!(
        out,
        "long audit log: {} bytes, {} lines in {} day files ({:.1} s to find or make)\n",
        log.bytes,
        log.lines,
        log.files.len(),
        made.elapsed().as_secs_f64()
    );
    let (empty, full) = (home("start-empty"), home("start-full"));
    log.install(&full.audit_dir());
    // Both in the page cache, as on a machine that has run a while: what is measured is
    // brokerd's work, not the disk's.
    for f in &log.files {
        let _ = std::fs::read(f);
    }
    let (warm, _) = start(&empty);
    let (first, _) = start(&full);
    let _ = writeln!(
        out,
        "first start: empty log {:.0} ms, long log {:.0} ms ({:.1} times)",
        warm.as_secs_f64() * 1e3,
        first.as_secs_f64() * 1e3,
        first.as_secs_f64() / warm.as_secs_f64()
    );
    let (mut e, mut f, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ce, mut cf, mut cratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (a, ca) = start(&empty);
        let (b, cb) = start(&full);
        let (a, b, ca, cb) = (
            a.as_secs_f64(),
            b.as_secs_f64(),
            ca.as_secs_f64(),
            cb.as_secs_f64(),
        );
        if verbose {
            let _ = writeln!(
                out,
                "round {round}: empty {:.1} ms ({:.1} ms CPU), long {:.1} ms ({:.1} ms CPU): {:.2}, CPU {:.2}",
                a * 1e3,
                ca * 1e3,
                b * 1e3,
                cb * 1e3,
                b / a,
                cb / ca
            );
        }
        e.push(a);
        f.push(b);
        ratios.push(b / a);
        ce.push(ca);
        cf.push(cb);
        cratios.push(cb / ca);
    }
    let _ = writeln!(
        out,
        "\n| brokerd's start to READY ({rounds} rounds, alternating) | time (median) | ratio to the empty log's start: median of the rounds (lowest to highest) | CPU time (median) | CPU time ratio: median (lowest to highest) |\n|---|---|---|---|---|\n\
         | empty audit log (the floor) | {:.1} ms | 1.00 | {:.1} ms | 1.00 |\n\
         | {} MiB of audit in {} day files | {:.1} ms | {} | {:.1} ms | {} |",
        median(&e) * 1e3,
        median(&ce) * 1e3,
        log.bytes >> 20,
        log.files.len(),
        median(&f) * 1e3,
        spread(&ratios),
        median(&cf) * 1e3,
        spread(&cratios),
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let _ = writeln!(
        out,
        "\nload average at the end: {}",
        load.split(' ').take(3).collect::<Vec<_>>().join(" ")
    );
}
