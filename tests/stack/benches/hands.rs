//! A write through brokerd against the write it stands on (issue 25's measure,
//! docs/performance.md): `write_file` of 4 KiB through brokerd on the direct runner (a
//! witnessed call: its report is sent before the timed request, as inferproxy sends it
//! before loopd has the answer) beside a bare write of the same bytes the way the commit
//! writes them: a new temporary file, fsync, rename over the target, fsync of the
//! directory. `create` runs one unit (the commit), `replace` two (the look, then the
//! commit). Floor and measure alternate one by one, in rounds; each ratio is the median
//! over rounds, with the lowest and highest beside it.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p stack --bench hands`.
//! Environment: `BENCH_ROUNDS` (default 9), `BENCH_OPS` (pairs per round, default 40),
//! `BENCH_VERBOSE`.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use daemon::conn::Conn;
use stack::{Home, request_as};

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

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The floor: `content` into `dir/name` by a temporary file, fsync, rename, directory fsync.
fn bare(dir: &Path, name: &str, content: &[u8]) -> Duration {
    let start = Instant::now();
    let tmp = dir.join(format!(".{name}.bench-tmp"));
    let mut f = std::fs::File::create(&tmp).expect("tmp");
    f.write_all(content).expect("write");
    f.sync_all().expect("fsync");
    std::fs::rename(&tmp, dir.join(name)).expect("rename");
    std::fs::File::open(dir)
        .expect("dir")
        .sync_all()
        .expect("dir fsync");
    start.elapsed()
}

/// `ops` pairs of a bare write and a `write_file` in `mode`; (floor, measure) seconds.
#[allow(clippy::too_many_arguments)]
fn pairs(
    home: &Home,
    conn: &mut Conn,
    call: &mut u64,
    floor_dir: &Path,
    notes: &Path,
    mode: &str,
    content: &str,
    ops: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (mut floor, mut measure) = (Vec::new(), Vec::new());
    for _ in 0..ops {
        // create: a new name each time; replace: the same file each time.
        let name = if mode == "create" {
            format!("new-{call}.md")
        } else {
            "same.md".to_owned()
        };
        let args =
            serde_json::json!({ "path": notes.join(&name), "mode": mode, "content": content })
                .to_string();
        let witness = stack::witnessed(&home.witness_sock(), "write_file", &args);
        floor.push(bare(floor_dir, &name, content.as_bytes()).as_secs_f64());
        let start = Instant::now();
        let frames = request_as(conn, "bench", *call, "write_file", &args, witness);
        measure.push(start.elapsed().as_secs_f64());
        assert!(
            matches!(stack::response(&frames), proto::ToolResponse::Result { .. }),
            "{frames:?}"
        );
        *call += 1;
    }
    (floor, measure)
}

fn main() {
    let mut out = std::io::stdout().lock();
    if !std::env::args().any(|a| a == "--bench") {
        let _ = writeln!(
            out,
            "hands bench: run it with `cargo bench -p stack --bench hands`"
        );
        return;
    }
    let (rounds, ops) = (env_or("BENCH_ROUNDS", 9), env_or("BENCH_OPS", 40));
    let verbose = std::env::var_os("BENCH_VERBOSE").is_some();
    let home = Home::new("bench-hands", "");
    let notes = home.files("notes", &[("same.md", "")]);
    let floor_dir = home.files("floor", &[]);
    home.write_grant(
        "notes-write",
        &format!(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n\
             [constraints]\npaths = [\"{}\"]\n",
            notes.display()
        ),
    );
    let _d = home.start();
    let mut conn = Conn::connect(&home.loop_sock()).expect("connect");
    let content = "x".repeat(4095) + "\n";
    let mut call = 1;
    // Warm up both sides.
    pairs(
        &home, &mut conn, &mut call, &floor_dir, &notes, "replace", &content, 5,
    );
    let _ = writeln!(
        out,
        "| write of 4 KiB ({rounds} rounds of {ops} pairs, direct runner) | per write (median) | ratio to the floor: median of the rounds (lowest to highest) |\n|---|---|---|"
    );
    let mut floor_all = Vec::new();
    let mut lines = Vec::new();
    for mode in ["create", "replace"] {
        let (mut all, mut ratios) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let (f, m) = pairs(
                &home, &mut conn, &mut call, &floor_dir, &notes, mode, &content, ops,
            );
            let ratio = median(&m) / median(&f);
            if verbose {
                let _ = writeln!(
                    out,
                    "{mode} round {round}: floor {:.0} µs, write_file {:.0} µs ({ratio:.1})",
                    median(&f) * 1e6,
                    median(&m) * 1e6
                );
            }
            ratios.push(ratio);
            all.extend(m);
            floor_all.extend(f);
        }
        lines.push(format!(
            "| `write_file` {mode} through brokerd | {:.0} µs | {} |",
            median(&all) * 1e6,
            spread(&ratios)
        ));
    }
    let _ = writeln!(
        out,
        "| temporary file, fsync, rename, directory fsync (the floor) | {:.0} µs | 1.00 |",
        median(&floor_all) * 1e6
    );
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let _ = writeln!(
        out,
        "\nload average at the end: {}",
        load.split(' ').take(3).collect::<Vec<_>>().join(" ")
    );
}
