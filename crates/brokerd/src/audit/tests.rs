//! Appending: day changes, reopening, durability order, poisoning. Every scenario ends by
//! walking the files with proto's `ChainVerifier` through `verify`, which splits lines on
//! its own (not through `scan.rs`), so a bug in the writer's reading cannot hide itself.

use std::fs;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use proto::chain::{ChainSummary, ChainVerifier, line_hash};
use proto::{
    AuditEvent, AuditLine, AuditRecord, CallId, DataClass, DecisionRecord, DenyReason, Hash32,
    SessionId, Timestamp,
};

use super::{AuditError, AuditLog, Clock, DurabilityEvent, Fault, OpenReport};

/// A unique directory under the system temp dir, removed when the test passes.
pub(super) struct Scratch(PathBuf);

impl Scratch {
    pub(super) fn new(name: &str) -> Self {
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
    pub(super) fn audit(&self) -> PathBuf {
        self.0.join("audit")
    }

    pub(super) fn root(&self) -> &Path {
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

pub(super) fn ts(text: &str) -> Timestamp {
    Timestamp::parse(text).expect("timestamp")
}

/// A clock the test sets by hand.
#[derive(Clone)]
pub(super) struct TestClock(Arc<AtomicU64>);

impl TestClock {
    pub(super) fn at(text: &str) -> Self {
        Self(Arc::new(AtomicU64::new(ts(text).as_millis())))
    }

    pub(super) fn set(&self, text: &str) {
        self.0.store(ts(text).as_millis(), Ordering::SeqCst);
    }

    pub(super) fn boxed(&self) -> Clock {
        let millis = Arc::clone(&self.0);
        Box::new(move || Timestamp::from_millis(millis.load(Ordering::SeqCst)).expect("clock"))
    }
}

pub(super) fn open(dir: &Path, clock: &TestClock) -> (AuditLog, OpenReport) {
    AuditLog::open_with_clock(dir, clock.boxed()).expect("open")
}

pub(super) fn grants(seq: u64, time: Timestamp, prev: Hash32) -> AuditLine {
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

fn denial(seq: u64, time: Timestamp, prev: Hash32) -> AuditLine {
    AuditLine::Decision(AuditRecord {
        seq,
        time,
        prev,
        session: SessionId::new("s-1").expect("session"),
        call: CallId(seq),
        tool: "read_file".into(),
        // A newline inside the arguments must stay escaped inside one stored line.
        arguments: "{\"path\":\"/a\\nb\"}\n".into(),
        session_taint: DataClass::Private,
        decision: DecisionRecord::Denied {
            reason: DenyReason::NoGrant,
            grant: None,
            detail: None,
        },
        canonical: None,
    })
}

/// Appends `n` grant lines.
pub(super) fn append_n(log: &mut AuditLog, n: usize) {
    for _ in 0..n {
        log.append(grants).expect("append");
    }
}

/// The stored lines of one file, without newlines.
pub(super) fn lines(dir: &Path, name: &str) -> Vec<Vec<u8>> {
    let bytes = fs::read(dir.join(name)).expect("read");
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    body.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
}

/// The `*.jsonl` names in the directory, sorted.
pub(super) fn day_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
}

/// Walks the whole directory with proto's verifier, as `bxctl audit verify` will.
pub(super) fn verify(dir: &Path) -> ChainSummary {
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
pub(super) fn append_raw(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .expect("open by hand");
    file.write_all(bytes).expect("write by hand");
}

#[test]
fn the_chain_continues_across_a_day_change() {
    let scratch = Scratch::new("day-change");
    let dir = scratch.audit();
    let clock = TestClock::at("2026-09-17T23:59:59.998Z");
    let (mut log, report) = open(&dir, &clock);
    assert_eq!((report.files, report.lines, report.recovered), (0, 0, None));
    let first = log.append(grants).expect("append");
    assert_eq!((first.seq, log.head().prev), (0, first.hash));
    clock.set("2026-09-17T23:59:59.999Z");
    let last_of_day = log.append(denial).expect("append");
    clock.set("2026-09-18T00:00:00.000Z");
    let next_day = log.append(denial).expect("append");
    log.append(grants).expect("append");

    assert_eq!(day_files(&dir), ["2026-09-17.jsonl", "2026-09-18.jsonl"]);
    let day1 = lines(&dir, "2026-09-17.jsonl");
    let day2 = lines(&dir, "2026-09-18.jsonl");
    assert_eq!((day1.len(), day2.len()), (2, 2));
    assert_eq!(line_hash(&day1[1]), last_of_day.hash);
    let AuditLine::Decision(first_of_day2) =
        serde_json::from_slice::<AuditLine>(&day2[0]).expect("parse")
    else {
        panic!("a decision line");
    };
    assert_eq!(
        (first_of_day2.seq, first_of_day2.prev, next_day.seq),
        (2, last_of_day.hash, 2)
    );
    assert_eq!(first_of_day2.arguments, "{\"path\":\"/a\\nb\"}\n");

    let summary = verify(&dir);
    assert_eq!((summary.lines, summary.recovered), (4, 0));
    assert_eq!(summary.head, log.head());
    assert!(summary.torn_tail.is_empty());
}

#[test]
fn reopening_continues_seq_and_prev() {
    let scratch = Scratch::new("reopen");
    let dir = scratch.audit();
    let clock = TestClock::at("2026-09-17T08:05:00.000Z");
    let (mut log, _) = open(&dir, &clock);
    append_n(&mut log, 3);
    let head = log.head();
    drop(log);

    let (mut log, report) = open(&dir, &clock);
    assert_eq!((report.files, report.lines), (1, 3));
    assert_eq!((report.earlier_recoveries, report.recovered), (0, None));
    assert_eq!((report.head, log.head()), (head, head));
    let next = log.append(grants).expect("append");
    assert_eq!(next.seq, 3);
    let stored = lines(&dir, "2026-09-17.jsonl");
    let parsed: AuditLine = serde_json::from_slice(&stored[3]).expect("parse");
    assert_eq!(parsed.prev(), head.prev);
    assert_eq!(verify(&dir).lines, 4);
}

#[test]
fn files_and_directory_are_private() {
    let scratch = Scratch::new("modes");
    let dir = scratch.audit();
    let clock = TestClock::at("2026-09-17T08:05:00.000Z");
    let (mut log, _) = open(&dir, &clock);
    append_n(&mut log, 1);
    let mode = |p: &Path| fs::metadata(p).expect("stat").permissions().mode() & 0o7777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("2026-09-17.jsonl")), 0o600);
    assert_eq!(mode(&dir.join(".lock")), 0o600);
}

#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Io(DurabilityEvent),
    Returned(u64),
}

#[test]
fn each_line_is_written_then_synced_before_append_returns() {
    let scratch = Scratch::new("observer");
    let clock = TestClock::at("2026-09-17T08:05:00.000Z");
    let (mut log, _) = open(&scratch.audit(), &clock);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    log.set_observer(Box::new(move |e| {
        sink.lock().expect("lock").push(Seen::Io(e));
    }));
    for _ in 0..2 {
        let appended = log.append(grants).expect("append");
        seen.lock()
            .expect("lock")
            .push(Seen::Returned(appended.seq));
    }
    use DurabilityEvent::{Synced, Written};
    assert_eq!(
        *seen.lock().expect("lock"),
        [
            Seen::Io(Written { seq: 0 }),
            Seen::Io(Synced { seq: 0 }),
            Seen::Returned(0),
            Seen::Io(Written { seq: 1 }),
            Seen::Io(Synced { seq: 1 }),
            Seen::Returned(1),
        ]
    );
}

#[test]
fn a_failed_write_or_fsync_poisons_the_log() {
    for (fault, op, on_disk) in [(Fault::Write, "write", 2), (Fault::Sync, "fsync", 3)] {
        let scratch = Scratch::new("poison");
        let dir = scratch.audit();
        let clock = TestClock::at("2026-09-17T08:05:00.000Z");
        let (mut log, _) = open(&dir, &clock);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        log.set_observer(Box::new(move |e| sink.lock().expect("lock").push(e)));
        append_n(&mut log, 2);
        log.fault.set(Some(fault));
        match log.append(grants) {
            Err(AuditError::Io { op: failed, .. }) => assert_eq!(failed, op),
            other => panic!("expected an I/O error, got {other:?}"),
        }
        assert!(log.is_poisoned());
        // The fault fired once; the log still refuses, because the disk state is unknown.
        let err = log.append(grants).expect_err("poisoned");
        assert!(matches!(err, AuditError::Poisoned { .. }), "{err}");
        assert!(err.to_string().contains("injected fault"), "{err}");
        let events = seen.lock().expect("lock").clone();
        assert!(!events.contains(&DurabilityEvent::Synced { seq: 2 }));
        assert_eq!(
            events.contains(&DurabilityEvent::Written { seq: 2 }),
            fault == Fault::Sync
        );
        drop(log);
        // A restart takes the log as it is on disk: a line whose fsync failed is there
        // (never answered, but kept), and the chain verifies.
        let (_, report) = open(&dir, &clock);
        assert_eq!(report.lines, on_disk);
        assert_eq!(verify(&dir).lines, on_disk);
    }
}

#[test]
fn a_line_not_built_from_the_given_head_is_refused_unwritten() {
    let scratch = Scratch::new("mismatch");
    let dir = scratch.audit();
    let clock = TestClock::at("2026-09-17T08:05:00.000Z");
    let (mut log, _) = open(&dir, &clock);
    let wrong_seq = log.append(|seq, time, prev| grants(seq + 1, time, prev));
    assert!(matches!(
        wrong_seq,
        Err(AuditError::Mismatch { field: "seq", .. })
    ));
    let wrong_prev = log.append(|seq, time, _| grants(seq, time, Hash32::from_bytes([1; 32])));
    assert!(matches!(
        wrong_prev,
        Err(AuditError::Mismatch { field: "prev", .. })
    ));
    let wrong_time = log.append(|seq, _, prev| grants(seq, ts("2026-01-01T00:00:00.000Z"), prev));
    assert!(matches!(
        wrong_time,
        Err(AuditError::Mismatch { field: "time", .. })
    ));
    assert!(!log.is_poisoned());
    assert!(day_files(&dir).is_empty());
    assert_eq!(log.append(grants).expect("append").seq, 0);
    assert_eq!(verify(&dir).lines, 1);
}

#[test]
fn a_clock_that_goes_back_never_reopens_an_earlier_file() {
    let scratch = Scratch::new("clock-back");
    let dir = scratch.audit();
    let clock = TestClock::at("2026-09-18T00:00:01.000Z");
    let (mut log, _) = open(&dir, &clock);
    append_n(&mut log, 1);
    clock.set("2026-09-17T23:59:59.000Z");
    append_n(&mut log, 1);
    drop(log);
    let (mut log, _) = open(&dir, &clock);
    append_n(&mut log, 1);
    assert_eq!(day_files(&dir), ["2026-09-18.jsonl"]);
    assert_eq!(lines(&dir, "2026-09-18.jsonl").len(), 3);
    assert_eq!(verify(&dir).lines, 3);
}
