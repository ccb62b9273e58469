//! The search measures of `docs/performance.md`: a generated corpus of 10,000 notes, the
//! full rebuild of the index, one incremental update, and the in-process query's p50 and
//! p99 beside `rg -l` over the same files (warm cache). A harness, not a test:
//! `cargo run -p noteindex --example measure` (the corpus is kept in
//! `~/.cache/boxmaker/search-corpus/`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use noteindex::{LABELS, Partition, search};

const NOTES: usize = 10_000;
const WORDS_PER_NOTE: usize = 600;
const ROUNDS: usize = 101;

/// A small deterministic generator: the same corpus every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn word(n: u64) -> String {
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fu", "go", "hi", "ju", "pe",
        "zo",
    ];
    let mut w = String::new();
    let mut n = n;
    for _ in 0..3 {
        w.push_str(SYL[(n % 16) as usize]);
        n /= 16;
    }
    w
}

fn corpus(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).expect("corpus dir");
    let mut rng = Lcg(7);
    (0..NOTES)
        .map(|i| {
            let path = dir.join(format!("note-{i:05}.md"));
            let mut text = String::new();
            for _ in 0..WORDS_PER_NOTE {
                // Zipf-like: most words common, a few rare.
                let r = rng.next() % 4096;
                text.push_str(&word(r * r / 4096));
                text.push(' ');
            }
            if i % 1000 == 0 {
                text.push_str("zanzibar");
            }
            if !path.exists() {
                std::fs::write(&path, &text).expect("note");
            }
            path
        })
        .collect()
}

fn pct(mut v: Vec<Duration>, p: usize) -> Duration {
    v.sort();
    v[(v.len() - 1) * p / 100]
}

fn main() {
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    let root = home.join(".cache/boxmaker/search-corpus");
    let notes = corpus(&root.join("notes"));
    let index = root.join("index");
    let _ = std::fs::remove_dir_all(&index);
    std::fs::create_dir_all(&index).expect("index dir");

    let start = Instant::now();
    let texts: Vec<(String, String)> = notes
        .iter()
        .map(|p| {
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            (name, std::fs::read_to_string(p).expect("read"))
        })
        .collect();
    let mut parts: Vec<Partition> = LABELS
        .iter()
        .map(|l| Partition::open(&index.join(l.file_name())).expect("open"))
        .collect();
    for (at, part) in parts.iter_mut().enumerate() {
        let mut batch = part.batch().expect("batch");
        for (_, (n, t)) in texts
            .iter()
            .enumerate()
            .filter(|(i, _)| i % LABELS.len() == at)
        {
            batch.put_note(n, t).expect("rebuild");
        }
        batch.commit().expect("commit");
    }
    let rebuild = start.elapsed();

    let start = Instant::now();
    let mut batch = parts[2].batch().expect("batch");
    batch.remove_note("note-00002").expect("remove");
    batch
        .put_note("note-00002", "an updated note")
        .expect("update");
    batch.commit().expect("commit");
    let update = start.elapsed();
    drop(parts);

    let paths: Vec<PathBuf> = LABELS.iter().map(|l| index.join(l.file_name())).collect();
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let dir = root.join("notes");
    let (mut ours, mut rg) = (Vec::new(), Vec::new());
    // Warm both once, then alternate.
    let hits = search(&paths, "zanzibar", None).expect("search").len();
    let rg_run = || {
        let out = Command::new("rg")
            .args(["-l", "-F", "zanzibar"])
            .arg(&dir)
            .output()
            .expect("rg");
        out.stdout.iter().filter(|&&b| b == b'\n').count()
    };
    let rg_hits = rg_run();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        search(&paths, "zanzibar", None).expect("search");
        ours.push(t.elapsed());
        let t = Instant::now();
        rg_run();
        rg.push(t.elapsed());
    }
    let mb = texts.iter().map(|(_, t)| t.len()).sum::<usize>() as f64 / 1e6;
    let (o50, o99, r50, r99) = (
        pct(ours.clone(), 50),
        pct(ours, 99),
        pct(rg.clone(), 50),
        pct(rg, 99),
    );
    let report = format!(
        "corpus: {NOTES} notes, {mb:.0} MB; hits: index {hits}, rg {rg_hits}\n\
         full rebuild: {rebuild:?}; one update: {update:?}\n\
         query p50 {o50:?} p99 {o99:?}; rg -l p50 {r50:?} p99 {r99:?}; rg/index at p50: {:.1}\n",
        r50.as_secs_f64() / o50.as_secs_f64()
    );
    std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes()).expect("stdout");
}
