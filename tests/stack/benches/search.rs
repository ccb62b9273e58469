//! Search over notes and session logs (issue 14's measures, docs/performance.md), on the
//! corpus of `stack::corpus` (10,000 notes and 1,000 session logs, about 100 MB), each
//! measure beside a floor run alternately with it in the same run:
//! - the full rebuild: one `boxmaker-indexer` run over the whole corpus from no index,
//!   beside one `rg -l` pass over the same files;
//! - the query: `noteindex::search` in process over all six published partitions, each
//!   opened immutable as a search unit opens them (both kinds, and the tool's kind only),
//!   and the whole `note_search` / `session_search` call sent to a running brokerd (direct
//!   runner) and answered, beside `rg -l -F` with a warm cache over the same files (the
//!   whole corpus, and the tool's files only): p50 and p99 of each. For the rare words the
//!   in-process query over the corpus must be at least 10 times faster than `rg -l` over
//!   the corpus at p50 (the target), asserted at the end; a common word is reported;
//! - the incremental update: one indexer run (index, publish) after one `note_write`
//!   through brokerd, beside an indexer run with nothing changed and a copy + fsync of the
//!   partition it publishes.
//!
//! Run: `cargo build --workspace --bins && cargo bench --profile dev -p stack --bench search`.
//! Environment: `BENCH_ROUNDS` (query rounds, default 101), `BENCH_REBUILDS` (default 3),
//! `BENCH_UPDATES` (default 11). With `-- --corpus-only` it only makes the cached corpus
//! whole and says so (tests/container/run.sh --measure-search, which measures the tool call
//! through brokerd's real systemd unit on it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use daemon::conn::Conn;
use noteindex::{Kind, LABELS};
use stack::corpus::{self, Corpus};
use stack::{Home, request, response};

/// The target: the in-process query at least this many times faster than `rg -l`
/// over the same files, at p50.
const TARGET: f64 = 10.0;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p`th percentile of `v` (nearest rank below).
fn pct(v: &[Duration], p: usize) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[(v.len() - 1) * p / 100]
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// `rg -l -F word` over `dirs`: the files it names.
fn rg(word: &str, dirs: &[PathBuf]) -> usize {
    let out = Command::new("rg")
        .args(["-l", "-F", word])
        .args(dirs)
        .output()
        .expect("rg (ripgrep) must be installed");
    out.stdout.iter().filter(|&&b| b == b'\n').count()
}

fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let got = f();
    (start.elapsed(), got)
}

struct Bench {
    home: Home,
    dirs: [PathBuf; 2],
    index: PathBuf,
    out: std::io::StdoutLock<'static>,
}

impl Bench {
    fn line(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
    }

    /// Full rebuilds from no index, each after an `rg -l` pass over the corpus.
    fn rebuild(&mut self, runs: usize) {
        let (mut floor, mut measure) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            floor.push(timed(|| rg(corpus::RARE_NOTE_WORD, &self.dirs)).0);
            let _ = std::fs::remove_dir_all(&self.index);
            let (took, log) = timed(|| self.home.index());
            measure.push(took);
            for l in LABELS {
                let file = l.file_name();
                assert!(log.contains(&file), "{file} was not published: {log}");
            }
        }
        let (f, m) = (pct(&floor, 50), pct(&measure, 50));
        self.line(&format!(
            "| full rebuild: one indexer run from no index ({runs} runs) | {} | | {:.1} × one `rg -l` pass |\n\
             | one `rg -l` pass over the corpus (its floor) | {} | | 1.0 |",
            ms(m),
            m.as_secs_f64() / f.as_secs_f64(),
            ms(f)
        ));
    }

    /// `rounds` of the in-process query (both kinds, and the tool's kind), `rg -l` (over
    /// the whole corpus, and over the tool's files) and the tool call through brokerd, one
    /// after the other; returns the in-process query's speed-up over `rg -l` on the corpus
    /// at p50.
    fn query(&mut self, conn: &mut Conn, call: &mut u64, what: Query, rounds: usize) -> f64 {
        let parts: Vec<PathBuf> = LABELS
            .iter()
            .map(|l| self.index.join(l.file_name()))
            .collect();
        let parts: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
        let all = self.dirs.clone();
        let mine = [self.dirs[what.dir].clone()];
        let args = serde_json::json!({ "query": what.word }).to_string();
        let mut tool = |call: &mut u64| {
            *call += 1;
            let frames = request(conn, "bench", *call, what.tool, &args);
            match response(&frames) {
                proto::ToolResponse::Result { content, .. } => content.lines().count(),
                other => panic!("{}: {other:?}", what.tool),
            }
        };
        let search = |kind| {
            noteindex::search(&parts, what.word, kind)
                .expect("search")
                .len()
        };
        // Warm all, and check that they agree on where a rare word is.
        let (hits, both) = (search(Some(what.kind)), search(None));
        let (files, corpus_files) = (rg(what.word, &mine), rg(what.word, &all));
        assert_eq!(
            hits,
            tool(call),
            "{}: in process and through brokerd",
            what.word
        );
        if what.rare {
            assert_eq!(hits, files, "{}: the index and rg -l", what.word);
            assert_eq!(both, corpus_files, "{}: the index and rg -l", what.word);
        }
        let mut t: [Vec<Duration>; 5] = Default::default();
        for _ in 0..rounds {
            t[0].push(timed(|| rg(what.word, &all)).0);
            t[1].push(timed(|| search(None)).0);
            t[2].push(timed(|| rg(what.word, &mine)).0);
            t[3].push(timed(|| search(Some(what.kind))).0);
            t[4].push(timed(|| tool(call)).0);
        }
        let (corpus50, mine50) = (pct(&t[0], 50), pct(&t[2], 50));
        let row = |name: String, v: &[Duration]| {
            let p50 = pct(v, 50);
            format!(
                "| {}: {name} | {} | {} | {:.1} | {:.1} |",
                what.label,
                ms(p50),
                ms(pct(v, 99)),
                corpus50.as_secs_f64() / p50.as_secs_f64(),
                mine50.as_secs_f64() / p50.as_secs_f64()
            )
        };
        let of = if what.dir == 0 {
            "notes"
        } else {
            "session logs"
        };
        let text = [
            row(
                format!("`rg -l` over the corpus, {corpus_files} files found (the floor)"),
                &t[0],
            ),
            row(
                format!("in process, six partitions, both kinds, {both} hits"),
                &t[1],
            ),
            row(format!("`rg -l` over the {of} only, {files} files"), &t[2]),
            row(
                format!("in process, six partitions, {of} only, {hits} hits"),
                &t[3],
            ),
            row(format!("`{}` through brokerd", what.tool), &t[4]),
        ]
        .join("\n");
        self.line(&text);
        corpus50.as_secs_f64() / pct(&t[1], 50).as_secs_f64()
    }

    /// The indexer run after brokerd restarts: brokerd sets the mode of every note's label
    /// record at its start (`Notes::open`), which changes their change time, so the indexer
    /// reads every note again.
    fn after_restart(&mut self, brokerd: &mut stack::Daemon) {
        brokerd.kill();
        *brokerd = self.home.start();
        let (took, log) = timed(|| self.home.index());
        let (idle, _) = timed(|| self.home.index());
        let what = log
            .lines()
            .find_map(|l| l.strip_prefix("boxmaker-indexer: "))
            .unwrap_or("nothing changed");
        self.line(&format!(
            "| the indexer run after brokerd restarts ({what}) | {} | | {:.2} |",
            ms(took),
            took.as_secs_f64() / idle.as_secs_f64()
        ));
    }

    /// One note written through brokerd, then the indexer run that indexes and publishes
    /// it; beside an indexer run with nothing to do and a copy + fsync of the partition.
    fn update(&mut self, conn: &mut Conn, call: &mut u64, runs: usize) {
        let name = corpus::note_name(2);
        // Note 2 is private and trusted, as the writing session is: the update moves it to
        // no other partition, so each run publishes exactly one.
        assert_eq!(corpus::label_of(2), (proto::DataClass::Private, false));
        let part = self.index.join("private.sqlite");
        let (mut idle, mut copy, mut measure) = (Vec::new(), Vec::new(), Vec::new());
        let mut checks = Vec::new();
        for run in 0..runs {
            let (took, log) = timed(|| self.home.index());
            assert!(!log.contains("published"), "nothing changed: {log}");
            idle.push(took);
            copy.push(
                timed(|| {
                    let tmp = self.index.join(".floor.tmp");
                    std::fs::copy(&part, &tmp).expect("copy");
                    std::fs::File::open(&tmp)
                        .and_then(|f| f.sync_all())
                        .expect("fsync");
                    std::fs::remove_file(&tmp).expect("remove");
                })
                .0,
            );
            // What every indexer run does first: open its six working partitions, each
            // checked (`quick_check`, FTS5's `integrity-check`).
            checks.push(
                timed(|| {
                    for l in LABELS {
                        noteindex::Partition::open(&self.index.join("work").join(l.file_name()))
                            .expect("a sound working partition");
                    }
                })
                .0,
            );
            *call += 1;
            let text = format!("an updated note, round {run} of the incremental update");
            let args = serde_json::json!({"mode": "replace", "name": name, "text": text});
            let frames = request(conn, "writer", *call, "note_write", &args.to_string());
            assert!(
                matches!(response(&frames), proto::ToolResponse::Result { .. }),
                "{frames:?}"
            );
            let (took, log) = timed(|| self.home.index());
            assert!(
                log.contains("1 notes, 0 session records; published private.sqlite\n"),
                "one note, one partition: {log}"
            );
            measure.push(took);
        }
        let size = std::fs::metadata(&part).map_or(0, |m| m.len());
        let i = pct(&idle, 50);
        let row = |what: &str, v: &[Duration]| {
            format!(
                "| {what} | {} | {} | {:.3} |",
                ms(pct(v, 50)),
                ms(pct(v, 99)),
                pct(v, 50).as_secs_f64() / i.as_secs_f64()
            )
        };
        let text = [
            row(
                &format!("one note's update: the indexer run after a `note_write` ({runs} runs)"),
                &measure,
            ),
            row("an indexer run with nothing changed (the floor)", &idle),
            row(
                &format!(
                    "copy + fsync of the partition published ({:.1} MB)",
                    size as f64 / 1e6
                ),
                &copy,
            ),
            row(
                "in process: opening the six working partitions, each checked (part of every run)",
                &checks,
            ),
        ]
        .join("\n");
        self.line(&text);
    }
}

#[derive(Clone, Copy)]
struct Query {
    label: &'static str,
    word: &'static str,
    tool: &'static str,
    kind: Kind,
    /// 0: the notes, 1: the session logs.
    dir: usize,
    rare: bool,
}

fn grants(home: &Home) {
    for t in ["note_search", "session_search", "note_write"] {
        home.write_grant(
            &t.replace('_', "-"),
            &format!(
                "tool = \"{t}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 result_class = \"public\"\nuntrusted = false\n"
            ),
        );
    }
}

fn main() {
    let mut out = std::io::stdout().lock();
    if std::env::args().any(|a| a == "--corpus-only") {
        // tests/container/run.sh --measure-search: the cached corpus, made whole, and no more.
        let (built, corpus) = timed(Corpus::cached);
        let _ = writeln!(out, "corpus: {} (ready in {built:?})", corpus.describe());
        return;
    }
    if !std::env::args().any(|a| a == "--bench") {
        // `cargo test --benches` runs this without `--bench`: measure nothing there.
        let _ = writeln!(
            out,
            "search bench: run it with `cargo bench --profile dev -p stack --bench search`"
        );
        return;
    }
    let (built, corpus) = timed(Corpus::cached);
    let _ = writeln!(out, "corpus: {} (ready in {built:?})", corpus.describe());
    let home = Home::new("search-bench", "");
    let root = home.root.join("home");
    corpus.link_into(&root);
    grants(&home);
    let mut bench = Bench {
        dirs: [root.join("memory/notes"), root.join("sessions")],
        index: root.join("index"),
        home,
        out,
    };
    let load = || {
        let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        l.split(' ').take(3).collect::<Vec<_>>().join(" ")
    };
    bench.line(&format!("load average at the start: {}\n", load()));
    bench.line("| measure | p50 | p99 | × the floor |\n|---|---|---|---|");
    // brokerd first: its start changes every label record's change time (see
    // `after_restart`), which would make the first indexer run after it a second rebuild.
    let mut brokerd = bench.home.start();
    bench.rebuild(env_or("BENCH_REBUILDS", 3));
    let mut conn = Conn::connect(&bench.home.loop_sock()).expect("connect brokerd");
    let mut call = 0;
    bench.line(
        "\n| query | p50 | p99 | `rg -l` on the corpus, p50 ÷ this p50 | `rg -l` on the kind's files, p50 ÷ this p50 |\n|---|---|---|---|---|",
    );
    let rounds = env_or("BENCH_ROUNDS", 101);
    let queries = [
        Query {
            label: "a rare word in the notes",
            word: corpus::RARE_NOTE_WORD,
            tool: "note_search",
            kind: Kind::Note,
            dir: 0,
            rare: true,
        },
        Query {
            label: "a rare word in the session logs",
            word: corpus::RARE_LOG_WORD,
            tool: "session_search",
            kind: Kind::Session,
            dir: 1,
            rare: true,
        },
        Query {
            label: "a common word in the notes",
            word: "bagogo",
            tool: "note_search",
            kind: Kind::Note,
            dir: 0,
            rare: false,
        },
    ];
    let mut speedups = Vec::new();
    for q in queries {
        speedups.push((q, bench.query(&mut conn, &mut call, q, rounds)));
    }
    bench.line("\n| update | p50 | p99 | × the floor |\n|---|---|---|---|");
    bench.update(&mut conn, &mut call, env_or("BENCH_UPDATES", 11));
    drop(conn);
    bench.after_restart(&mut brokerd);
    bench.line(&format!("\nload average at the end: {}", load()));
    for (q, speedup) in speedups.into_iter().filter(|(q, _)| q.rare) {
        assert!(
            speedup >= TARGET,
            "{}: the in-process query is {speedup:.1} times faster than rg -l over the \
             same files at p50; the target is at least {TARGET}",
            q.label
        );
    }
}
