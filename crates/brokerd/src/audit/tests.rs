//! That a failed write or fsync poisons the log, through the writer's fault injection (the
//! rest of the writer is tested from outside, in `tests/brokerd/audit`). The log is walked
//! with proto's `ChainVerifier`, not through `scan.rs`, so the writer cannot vouch for itself.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use proto::chain::{ChainSummary, ChainVerifier};
use proto::{AuditEvent, AuditLine, Hash32, Timestamp};

use super::{AuditError, AuditLog, DurabilityEvent, Fault, OpenReport};

/// A directory under the system temp dir, removed when the test passes.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("brokerd-audit-unit-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("scratch dir");
        Self(path)
    }

    fn audit(&self) -> PathBuf {
        self.0.join("audit")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// Opens the log with a clock that stands still at `at`.
fn open(dir: &Path, at: &str) -> (AuditLog, OpenReport) {
    let at = Timestamp::parse(at).expect("timestamp");
    AuditLog::open_with_clock(dir, Box::new(move || at)).expect("open")
}

fn grants(seq: u64, time: Timestamp, prev: Hash32) -> AuditLine {
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

/// Walks every `*.jsonl` file in name order with proto's verifier.
fn verify(dir: &Path) -> ChainSummary {
    let mut names: Vec<PathBuf> = fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    names.sort();
    let mut verifier = ChainVerifier::default();
    let mut newline_at_end = true;
    for path in names {
        let bytes = fs::read(&path).expect("read");
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        if bytes.is_empty() {
            continue;
        }
        newline_at_end = bytes.ends_with(b"\n");
        let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        for (i, line) in body.split(|b| *b == b'\n').enumerate() {
            let n = u64::try_from(i + 1).expect("line number");
            verifier.push(name, n, line).expect("chain verifies");
        }
    }
    verifier.finish(newline_at_end).expect("chain verifies")
}

#[test]
fn a_failed_write_or_fsync_poisons_the_log() {
    for (fault, op, on_disk) in [(Fault::Write, "write", 2), (Fault::Sync, "fsync", 3)] {
        let scratch = Scratch::new("poison");
        let dir = scratch.audit();
        let clock = "2026-09-17T08:05:00.000Z";
        let (mut log, _) = open(&dir, clock);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        log.set_observer(Box::new(move |e| sink.lock().expect("lock").push(e)));
        for _ in 0..2 {
            log.append(grants).expect("append");
        }
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
        let (_, report) = open(&dir, clock);
        assert_eq!(report.lines, on_disk);
        assert_eq!(verify(&dir).lines, on_disk);
    }
}
