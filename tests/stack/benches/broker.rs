//! brokerd's costs against the floor they stand on, as ratios (docs/performance.md):
//! - the round trip of a denied request and of an `auto` call to a no-op tool (direct
//!   runner), beside a bare write + fdatasync loop on the same disk: every decision is one
//!   audit line fsynced before the answer, so that loop is the floor;
//! - `bxctl audit verify` throughput beside `sha256sum` over the same files.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p stack`.

use std::fs::OpenOptions;
use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use daemon::conn::Conn;
use stack::{Home, read_grant, request};

const FLOOR_OPS: u32 = 2000;
const DENIED_OPS: u64 = 2000;
const NOOP_OPS: u64 = 500;

fn per_op(total: Duration, ops: u64) -> Duration {
    total / u32::try_from(ops).unwrap_or(u32::MAX)
}

fn floor(home: &Home) -> Duration {
    let path = home.root.join("floor.jsonl");
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("floor file");
    let line = [b'x'; 400];
    let start = Instant::now();
    for _ in 0..FLOOR_OPS {
        f.write_all(&line).expect("write");
        f.sync_data().expect("fdatasync");
    }
    start.elapsed() / FLOOR_OPS
}

fn main() {
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

    let floor = floor(&home);
    let _d = home.start();
    let mut conn = Conn::connect(&home.loop_sock()).expect("connect");
    let start = Instant::now();
    for call in 0..DENIED_OPS {
        request(
            &mut conn,
            "bench",
            call,
            "read_file",
            r#"{"path":"/etc/passwd"}"#,
        );
    }
    let denied = per_op(start.elapsed(), DENIED_OPS);
    let args = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let start = Instant::now();
    for call in DENIED_OPS..DENIED_OPS + NOOP_OPS {
        request(&mut conn, "bench", call, "read_file", &args);
    }
    let noop = per_op(start.elapsed(), NOOP_OPS);

    // Verify: a synthetic chain of realistic decision records, large enough that process
    // start-up does not dominate.
    let audit = home.root.join("bench-audit");
    synthesize(&audit, 64 * 1024 * 1024);
    let files: Vec<_> = std::fs::read_dir(&audit)
        .expect("audit dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let rounds = 5u32;
    let time = |cmd: &mut Command| {
        let start = Instant::now();
        for _ in 0..rounds {
            let out = cmd.output().expect("run");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        start.elapsed() / rounds
    };
    let verify = time(
        Command::new(stack::bin("bxctl"))
            .args(["audit", "verify", "--dir"])
            .arg(&audit),
    );
    let sha = time(Command::new("sha256sum").args(&files));
    let mib = |d: Duration| bytes as f64 / (1024.0 * 1024.0) / d.as_secs_f64();

    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "| measure | per operation | ratio to the floor |\n|---|---|---|\n\
         | write + fdatasync of a 400-byte line (the floor) | {floor:?} | 1.00 |\n\
         | denied request, round trip | {denied:?} | {:.2} |\n\
         | auto call to a no-op tool (direct runner), round trip | {noop:?} | {:.2} |\n\n\
         | audit log of {bytes} bytes | time | MiB/s | ratio to sha256sum |\n|---|---|---|---|\n\
         | sha256sum | {sha:?} | {:.1} | 1.00 |\n\
         | bxctl audit verify | {verify:?} | {:.1} | {:.2} |",
        ratio(denied, floor),
        ratio(noop, floor),
        mib(sha),
        mib(verify),
        ratio(verify, sha),
    );
}

/// Writes a valid chain of decision records of about `size` bytes into `dir`.
fn synthesize(dir: &std::path::Path, size: u64) {
    use proto::{AuditLine, AuditRecord, CallId, DataClass, DecisionRecord, Hash32, SessionId};
    std::fs::create_dir_all(dir).expect("dir");
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(dir.join("2026-09-17.jsonl")).expect("file"));
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
}
