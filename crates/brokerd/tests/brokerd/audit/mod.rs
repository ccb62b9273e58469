//! The audit log: appending and opening. Every scenario ends by walking the files with
//! proto's `ChainVerifier` through `verify`, which splits lines on its own (not through the
//! writer's own scan at open), so a bug in the writer's reading cannot hide itself.

mod append;
mod checkpoint;
mod open;

use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use proto::chain::{ChainSummary, ChainVerifier};
use proto::{AuditEvent, AuditLine, Hash32, Timestamp};

use brokerd::audit::{AuditLog, Clock, OpenReport};

/// A unique directory under the system temp dir, removed when the test passes.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("brokerd-audit-{}-{name}-{n}", std::process::id()));
        // A leftover from an earlier run with the same pid would change the scenario.
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("scratch dir");
        Self(path)
    }

    /// The audit directory (not yet created: `open` creates it).
    pub fn audit(&self) -> PathBuf {
        self.0.join("audit")
    }

    pub fn root(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Keep the files of a failed test for inspection.
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

pub fn ts(text: &str) -> Timestamp {
    Timestamp::parse(text).expect("timestamp")
}

/// A clock the test sets by hand.
#[derive(Clone)]
pub struct TestClock(Arc<AtomicU64>);

impl TestClock {
    pub fn at(text: &str) -> Self {
        Self(Arc::new(AtomicU64::new(ts(text).as_millis())))
    }

    pub fn set(&self, text: &str) {
        self.0.store(ts(text).as_millis(), Ordering::SeqCst);
    }

    pub fn boxed(&self) -> Clock {
        let millis = Arc::clone(&self.0);
        Box::new(move || Timestamp::from_millis(millis.load(Ordering::SeqCst)).expect("clock"))
    }
}

pub fn open(dir: &Path, clock: &TestClock) -> (AuditLog, OpenReport) {
    AuditLog::open_with_clock(dir, clock.boxed()).expect("open")
}

pub fn grants(seq: u64, time: Timestamp, prev: Hash32) -> AuditLine {
    AuditLine::Event(AuditEvent::GrantsLoaded {
        seq,
        time,
        prev,
        snapshot: Hash32::from_bytes([7; 32]),
        grants: vec!["notes-read".into()],
        texts: Default::default(),
        since: None,
    })
}

/// Appends `n` grant lines.
pub fn append_n(log: &mut AuditLog, n: usize) {
    for _ in 0..n {
        log.append(grants).expect("append");
    }
}

/// The stored lines of one file, without newlines.
pub fn lines(dir: &Path, name: &str) -> Vec<Vec<u8>> {
    let bytes = fs::read(dir.join(name)).expect("read");
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    body.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
}

/// The `*.jsonl` names in the directory, sorted.
pub fn day_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
}

/// Walks the whole directory with proto's verifier, as `bxctl audit verify` will.
pub fn verify(dir: &Path) -> ChainSummary {
    let mut verifier = ChainVerifier::default();
    let mut newline_at_end = true;
    for name in day_files(dir) {
        let bytes = fs::read(dir.join(&name)).expect("read");
        if bytes.is_empty() {
            continue;
        }
        newline_at_end = bytes.ends_with(b"\n");
        for (i, line) in lines(dir, &name).iter().enumerate() {
            let n = u64::try_from(i + 1).expect("line number");
            verifier.push(&name, n, line).expect("chain verifies");
        }
    }
    verifier.finish(newline_at_end).expect("chain verifies")
}

/// Appends raw bytes to a file by hand, as a crash or an intruder would leave them.
pub fn append_raw(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .expect("open by hand");
    file.write_all(bytes).expect("write by hand");
}
