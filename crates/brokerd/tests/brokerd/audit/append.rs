//! Appending: day changes, reopening, durability order, refusing a line not built from the
//! head. (That a failed write or fsync poisons the log needs the writer's fault injection,
//! so it is a unit test beside the writer.)

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use brokerd::audit::{AuditError, DurabilityEvent};
use proto::chain::line_hash;
use proto::{
    AuditLine, AuditRecord, CallId, DataClass, DecisionRecord, DenyReason, Hash32, SessionId,
    Timestamp,
};

use super::{Scratch, TestClock, append_n, day_files, grants, lines, open, ts, verify};

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
        witness: None,
        untrusted: false,
        write: None,
    })
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
