//! brokerd's costs against the floor they stand on, as ratios (docs/performance.md, issue
//! 10's measures):
//! - the round trip of a denied request and of an `auto` call to a no-op tool (direct
//!   runner), beside a bare write + fdatasync of a line of the denied record's length in
//!   the audit directory itself: every decision is one audit line fsynced before its
//!   answer, so that loop is the floor;
//! - `bxctl audit verify` throughput beside `sha256sum` over the same 64 MiB log.
//!
//! Floor and measure run in alternating rounds, so that whatever else the shared machine
//! does weighs on both alike; each ratio is the median of the per-round ratios, with the
//! lowest and highest beside it.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p stack --bench broker`.
//! Environment: `BENCH_ROUNDS` (round-trip rounds, default 15), `BENCH_OPS` (requests per
//! round, default 300), `BENCH_VERIFY_RUNS` (default 11), `BENCH_MIB` (log size, default
//! 64), `BENCH_ONLY` (`rtt` or `verify`), `BENCH_VERBOSE` (print every round).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use daemon::conn::Conn;
use stack::{Home, read_grant, request};

/// One measure's rounds: the time per operation of the floor and of the measure.
#[derive(Default)]
struct Rounds {
    floor: Vec<f64>,
    measure: Vec<f64>,
}

impl Rounds {
    fn push(&mut self, floor: Duration, measure: Duration) {
        self.floor.push(floor.as_secs_f64());
        self.measure.push(measure.as_secs_f64());
    }

    /// The per-round ratios measure / floor, sorted.
    fn ratios(&self) -> Vec<f64> {
        let mut r: Vec<f64> = self
            .measure
            .iter()
            .zip(&self.floor)
            .map(|(m, f)| m / f)
            .collect();
        r.sort_by(f64::total_cmp);
        r
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `ops` appends of `line` with an fdatasync each, the way the audit writer appends.
fn floor(path: &Path, line: &[u8], ops: usize) -> Duration {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("floor file");
    let start = Instant::now();
    for _ in 0..ops {
        f.write_all(line).expect("write");
        f.sync_data().expect("fdatasync");
    }
    start.elapsed() / u32::try_from(ops).unwrap_or(u32::MAX)
}

/// `ops` requests on `conn`, numbered from `*call`; the time per request.
fn requests(conn: &mut Conn, call: &mut u64, args: &str, ops: usize) -> Duration {
    let start = Instant::now();
    for _ in 0..ops {
        request(conn, "bench", *call, "read_file", args);
        *call += 1;
    }
    start.elapsed() / u32::try_from(ops).unwrap_or(u32::MAX)
}

/// The home brokerd runs in: a notes grant whose calls run a no-op tool.
fn home() -> (Home, String) {
    let home = Home::new("bench", "");
    let notes = home.files("notes", &[("n.md", "")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let noop = home.root.join("noop-tool");
    std::fs::write(
        &noop,
        "#!/bin/sh\ncat >/dev/null\nprintf '{\"status\":\"ok\",\"content\":\"\",\"truncated\":false}'\n",
    )
    .expect("noop tool");
    std::fs::set_permissions(&noop, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let config = std::fs::read_to_string(home.config()).expect("config");
    let tool_line = config
        .lines()
        .find(|l| l.starts_with("tool = "))
        .expect("tool line")
        .to_owned();
    std::fs::write(
        home.config(),
        config.replace(&tool_line, &format!("tool = \"{}\"", noop.display())),
    )
    .expect("config");
    let args = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    (home, args)
}

/// The last line of the newest audit file, with its newline.
fn last_audit_line(dir: &Path) -> Vec<u8> {
    let mut days: Vec<_> = std::fs::read_dir(dir)
        .expect("audit dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    days.sort();
    let text = std::fs::read(days.last().expect("an audit file")).expect("audit file");
    let body = &text[..text.len() - 1];
    let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    text[start..].to_vec()
}

const DENIED: &str = r#"{"path":"/etc/passwd"}"#;

/// Denied and no-op round trips, each in rounds alternating with its floor.
fn round_trips(out: &mut dyn Write, verbose: bool) {
    let rounds = env_or("BENCH_ROUNDS", 15);
    let ops = env_or("BENCH_OPS", 300);
    let (home, args) = home();
    let _d = home.start();
    let mut conn = Conn::connect(&home.loop_sock()).expect("connect");
    let mut call = 0;
    // Warm up, and learn the length of a denied record: the floor writes lines as long.
    requests(&mut conn, &mut call, DENIED, ops);
    let audit = home.root.join("home/audit");
    let mut line = last_audit_line(&audit);
    line.fill(b'x');
    *line.last_mut().expect("a line") = b'\n';
    let floor_file = audit.join("floor.bench");
    let (mut denied, mut noop) = (Rounds::default(), Rounds::default());
    for round in 0..rounds {
        let f = floor(&floor_file, &line, ops);
        let d = requests(&mut conn, &mut call, DENIED, ops);
        denied.push(f, d);
        let f = floor(&floor_file, &line, ops / 4);
        let n = requests(&mut conn, &mut call, &args, ops / 4);
        noop.push(f, n);
        if verbose {
            let _ = writeln!(out, "round {round}: floor {f:?}, denied {d:?}, no-op {n:?}");
        }
    }
    let _ = writeln!(
        out,
        "| measure ({rounds} rounds of {ops} requests, {} fsynced bytes a line) | per operation (median) | ratio to the floor: median (lowest to highest) |\n|---|---|---|",
        line.len()
    );
    let row = |out: &mut dyn Write, name: &str, times: &[f64], ratios: Option<&[f64]>| {
        let ratio = ratios.map_or("1.00".into(), |r| {
            format!(
                "{:.2} ({:.2} to {:.2})",
                r[r.len() / 2],
                r[0],
                r[r.len() - 1]
            )
        });
        let us = median(times) * 1e6;
        let _ = writeln!(out, "| {name} | {us:.0} µs | {ratio} |");
    };
    row(out, "write + fdatasync of the line (the floor)", &denied.floor, None);
    row(
        out,
        "denied request, round trip",
        &denied.measure,
        Some(&denied.ratios()),
    );
    row(
        out,
        "`auto` call to a no-op tool (direct runner), round trip",
        &noop.measure,
        Some(&noop.ratios()),
    );
}

/// `bxctl audit verify` and `sha256sum` over one synthetic log, in alternating runs.
fn verify(out: &mut dyn Write, verbose: bool) {
    let runs = env_or("BENCH_VERIFY_RUNS", 11);
    let mib = env_or("BENCH_MIB", 64);
    let dir = std::env::temp_dir().join(format!("bx-verify-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = synthesize(&dir, u64::try_from(mib).unwrap_or(64) << 20);
    let bytes = std::fs::metadata(&file).expect("log").len();
    let time = |cmd: &mut Command| {
        let start = Instant::now();
        let got = cmd.output().expect("run");
        let took = start.elapsed();
        assert!(
            got.status.success(),
            "{}",
            String::from_utf8_lossy(&got.stdout)
        );
        took
    };
    let mut rounds = Rounds::default();
    for run in 0..=runs {
        let sha = time(Command::new("sha256sum").arg(&file));
        let verify = time(
            Command::new(stack::bin("bxctl"))
                .args(["audit", "verify", "--dir"])
                .arg(&dir),
        );
        if verbose {
            let _ = writeln!(out, "run {run}: sha256sum {sha:?}, verify {verify:?}");
        }
        if run > 0 {
            rounds.push(sha, verify); // run 0 warms the page cache
        }
    }
    let mibs = |secs: f64| bytes as f64 / f64::from(1 << 20) / secs;
    // Throughput ratio: sha256sum's time over verify's.
    let mut ratios: Vec<f64> = rounds.ratios().iter().map(|r| 1.0 / r).collect();
    ratios.sort_by(f64::total_cmp);
    let _ = writeln!(
        out,
        "| audit log of {bytes} bytes, {runs} runs | time (median) | MiB/s | throughput, × sha256sum: median (lowest to highest) |\n|---|---|---|---|\n\
         | `sha256sum` (the floor) | {:.0} ms | {:.0} | 1.00 |\n\
         | `bxctl audit verify` | {:.0} ms | {:.0} | {:.2} ({:.2} to {:.2}) |",
        median(&rounds.floor) * 1e3,
        mibs(median(&rounds.floor)),
        median(&rounds.measure) * 1e3,
        mibs(median(&rounds.measure)),
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let mut out = std::io::stdout().lock();
    if !std::env::args().any(|a| a == "--bench") {
        // `cargo test --benches` runs this without `--bench`: measure nothing there.
        let _ = writeln!(out, "broker bench: run it with `cargo bench -p stack`");
        return;
    }
    let verbose = std::env::var_os("BENCH_VERBOSE").is_some();
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            let l = t.lines().find(|l| l.starts_with("model name"))?;
            Some(l.split_once(':')?.1.trim().to_owned())
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "brokerd benchmark: {cpu} ({} CPUs), release build\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if only != "verify" {
        round_trips(&mut out, verbose);
        let _ = writeln!(out);
    }
    if only != "rtt" {
        verify(&mut out, verbose);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let _ = writeln!(
        out,
        "\nload average at the end: {}",
        load.split(' ').take(3).collect::<Vec<_>>().join(" ")
    );
}

/// Writes a valid chain of decision records of about `size` bytes into `dir`; returns the
/// file.
fn synthesize(dir: &Path, size: u64) -> std::path::PathBuf {
    use proto::{AuditLine, AuditRecord, CallId, DataClass, DecisionRecord, Hash32, SessionId};
    std::fs::create_dir_all(dir).expect("dir");
    let path = dir.join("2026-09-17.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("file"));
    let (mut prev, mut written, mut seq) = (Hash32::ZERO, 0u64, 0u64);
    let time = proto::Timestamp::from_millis(1_789_632_300_000).expect("time");
    let session = SessionId::new("s-bench").expect("id");
    while written < size {
        let line = serde_json::to_vec(&AuditLine::Decision(AuditRecord {
            seq,
            time,
            prev,
            session: session.clone(),
            call: CallId(seq),
            tool: "read_file".into(),
            arguments: r#"{"path":"/home/owner/notes/todo.md"}"#.into(),
            session_taint: DataClass::Private,
            decision: DecisionRecord::Allowed {
                grant: "notes".into(),
            },
            canonical: Some(r#"{"path":"/home/owner/notes/todo.md"}"#.into()),
        }))
        .expect("line");
        prev = proto::chain::line_hash(&line);
        out.write_all(&line).expect("write");
        out.write_all(b"\n").expect("write");
        written += u64::try_from(line.len()).unwrap_or(0) + 1;
        seq += 1;
    }
    out.flush().expect("flush");
    path
}
