//! brokerd's costs against the floor they stand on, as ratios (docs/performance.md, issue
//! 10's measures):
//! - the round trip of a denied request and of an `auto` call to a no-op tool (direct
//!   runner), each a witnessed call (its report sent before the timed request, as
//!   inferproxy sends it before loopd has the answer), beside a bare write + fdatasync of a
//!   line of the denied record's length in the audit directory itself: every decision is
//!   one audit line fsynced before its answer, so that loop is the floor; since issue 17 a
//!   decision also looks the witness up and marks the call used (in memory: the audit line,
//!   which names the witness, is the durable use, docs/decisions.md W9), and the answer's
//!   tool message is accounted (a line in brokerd's accounting, fsynced, X3);
//! - `bxctl audit verify` throughput beside `sha256sum` over the same 64 MiB log.
//!
//! Floor and measure alternate (one append, one request; one sha256sum, one verify), so
//! that whatever else the shared machine does weighs on both alike; each ratio is the
//! median over rounds, with the lowest and highest beside it.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p stack --bench broker`.
//! Environment: `BENCH_ROUNDS` (round-trip rounds, default 15), `BENCH_OPS` (pairs per
//! round, default 200), `BENCH_VERIFY_RUNS` (default 11), `BENCH_MIB` (log size, default
//! 64), `BENCH_ONLY` (`rtt` or `verify`), `BENCH_VERBOSE` (print every round).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use daemon::conn::Conn;
use stack::{Home, read_grant, request, request_as};

/// One round of a measure beside its floor: the time of each operation of both.
#[derive(Default)]
struct Round {
    floor: Vec<f64>,
    measure: Vec<f64>,
}

impl Round {
    fn push(&mut self, floor: Duration, measure: Duration) {
        self.floor.push(floor.as_secs_f64());
        self.measure.push(measure.as_secs_f64());
    }

    /// Median measure over median floor.
    fn ratio(&self) -> f64 {
        median(&self.measure) / median(&self.floor)
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median and the range of `v`, as `m (lo to hi)`.
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

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `ops` pairs of one append of `line` with its fdatasync (the way the audit writer
/// appends) and one request on `conn` (numbered from `*call`), each timed. Alternating
/// one by one, both see the same disk: on these VMs an fdatasync swings from 0.1 to 2 ms
/// with what the other tenants write.
fn pairs(
    floor: &mut File,
    line: &[u8],
    witness_sock: &Path,
    conn: &mut Conn,
    call: &mut u64,
    args: &str,
    ops: usize,
) -> Round {
    let mut round = Round::default();
    for _ in 0..ops {
        // inferproxy's report, before the request as in the stack: not part of the decision.
        let witness = stack::witnessed(witness_sock, "read_file", args);
        let start = Instant::now();
        floor.write_all(line).expect("write");
        floor.sync_data().expect("fdatasync");
        let appended = Instant::now();
        request_as(conn, "bench", *call, "read_file", args, witness);
        round.push(appended - start, appended.elapsed());
        *call += 1;
    }
    round
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

/// Denied and no-op round trips, each op by op beside the floor, in rounds.
fn round_trips(out: &mut dyn Write, verbose: bool) {
    let rounds = env_or("BENCH_ROUNDS", 15);
    let ops = env_or("BENCH_OPS", 200);
    let (home, args) = home();
    let _d = home.start();
    let mut conn = Conn::connect(&home.loop_sock()).expect("connect");
    let mut call = 0;
    // Warm up, and learn the length of a denied record: the floor writes lines as long,
    // into the audit directory itself (brokerd ignores files not named like a day).
    for _ in 0..ops {
        request(&mut conn, "bench", call, "read_file", DENIED);
        call += 1;
    }
    let audit = home.root.join("home/audit");
    let mut line = last_audit_line(&audit);
    line.fill(b'x');
    *line.last_mut().expect("a line") = b'\n';
    let mut floor = OpenOptions::new()
        .create(true)
        .append(true)
        .open(audit.join("floor.bench"))
        .expect("floor file");
    let (mut denied, mut noop) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let w = home.witness_sock();
        let d = pairs(&mut floor, &line, &w, &mut conn, &mut call, DENIED, ops);
        let n = pairs(&mut floor, &line, &w, &mut conn, &mut call, &args, ops / 4);
        if verbose {
            let _ = writeln!(
                out,
                "round {round}: floor {:.0} µs, denied {:.0} µs ({:.2}), no-op {:.0} µs ({:.2})",
                median(&d.floor) * 1e6,
                median(&d.measure) * 1e6,
                d.ratio(),
                median(&n.measure) * 1e6,
                n.ratio()
            );
        }
        denied.push(d);
        noop.push(n);
    }
    let all = |rounds: &[Round], f: fn(&Round) -> &Vec<f64>| {
        median(
            &rounds
                .iter()
                .flat_map(|r| f(r).iter().copied())
                .collect::<Vec<_>>(),
        ) * 1e6
    };
    let ratios = |rounds: &[Round]| spread(&rounds.iter().map(Round::ratio).collect::<Vec<_>>());
    let _ = writeln!(
        out,
        "| measure ({rounds} rounds of {ops} pairs, {} fsynced bytes a line) | per operation (median) | ratio to the floor: median of the rounds (lowest to highest) |\n|---|---|---|\n\
         | write + fdatasync of the line (the floor) | {:.0} µs | 1.00 |\n\
         | denied request, round trip | {:.0} µs | {} |\n\
         | `auto` call to a no-op tool (direct runner), round trip | {:.0} µs | {} |",
        line.len(),
        all(&denied, |r| &r.floor),
        all(&denied, |r| &r.measure),
        ratios(&denied),
        all(&noop, |r| &r.measure),
        ratios(&noop),
    );
}

/// The CPU time (user and system, in clock ticks) of this process's children that have
/// been waited for: `cutime` and `cstime` of /proc/self/stat.
fn children_cpu() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which is in parentheses; `cutime` is the 16th
    // field of the line, the 14th after the name.
    let after = stat.rsplit_once(") ").expect("stat").1;
    let fields: Vec<u64> = after
        .split(' ')
        .skip(13)
        .take(2)
        .map(|f| f.parse().expect("a tick count"))
        .collect();
    fields.iter().sum()
}

/// `bxctl audit verify` and `sha256sum` over one synthetic log, in alternating runs:
/// wall-clock time per run (the throughput a person sees), and the CPU time of all runs
/// together (what the machine's other tenants do not change).
fn verify(out: &mut dyn Write, verbose: bool) {
    let runs = env_or("BENCH_VERIFY_RUNS", 11);
    let mib = env_or("BENCH_MIB", 64);
    let dir = std::env::temp_dir().join(format!("bx-verify-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = synthesize(&dir, u64::try_from(mib).unwrap_or(64) << 20);
    let bytes = std::fs::metadata(&file).expect("log").len();
    // Wall-clock time and CPU ticks of one run.
    let time = |cmd: &mut Command| {
        let (start, ticks) = (Instant::now(), children_cpu());
        let got = cmd.output().expect("run");
        let took = (start.elapsed(), children_cpu() - ticks);
        assert!(
            got.status.success(),
            "{}",
            String::from_utf8_lossy(&got.stdout)
        );
        took
    };
    let (mut wall, mut ratios, mut cpu) = (Round::default(), Vec::new(), (0, 0));
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
            // Run 0 warms the page cache.
            wall.push(sha.0, verify.0);
            ratios.push(sha.0.as_secs_f64() / verify.0.as_secs_f64());
            cpu = (cpu.0 + sha.1, cpu.1 + verify.1);
        }
    }
    let mibs = |secs: f64| bytes as f64 / f64::from(1 << 20) / secs;
    let _ = writeln!(
        out,
        "| audit log of {bytes} bytes, {runs} runs | time (median) | MiB/s | throughput, × sha256sum: median of the runs (lowest to highest) | CPU time of all runs, sha256sum's ÷ verify's |\n|---|---|---|---|---|\n\
         | `sha256sum` (the floor) | {:.0} ms | {:.0} | 1.00 | 1.00 |\n\
         | `bxctl audit verify` | {:.0} ms | {:.0} | {} | {:.2} |",
        median(&wall.floor) * 1e3,
        mibs(median(&wall.floor)),
        median(&wall.measure) * 1e3,
        mibs(median(&wall.measure)),
        spread(&ratios),
        cpu.0 as f64 / cpu.1.max(1) as f64,
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
    let mut out = std::io::BufWriter::new(File::create(&path).expect("file"));
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
            witness: None,
            untrusted: false,
            write: None,
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
