//! Opening: torn tails and their recovery, what refuses start, the lock, symbolic links.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};

use proto::chain::line_hash;
use proto::{AuditEvent, AuditLine, TornLine};

use brokerd::audit::{AuditError, AuditLog, OpenReport};

use super::{Scratch, TestClock, append_n, append_raw, day_files, grants, lines, open, verify};

const DAY: &str = "2026-09-17.jsonl";
const TORN: &[u8] = b"{\"kind\":\"grants_loaded\",\"seq\":3,\"ti";

/// A log of `n` lines on 2026-09-17, closed again.
fn log_of(scratch: &Scratch, n: usize) -> TestClock {
    let clock = TestClock::at("2026-09-17T08:05:00.000Z");
    let (mut log, _) = open(&scratch.audit(), &clock);
    append_n(&mut log, n);
    clock
}

fn chain_error(result: Result<(AuditLog, OpenReport), AuditError>) -> (String, u64, String) {
    let err = result.expect_err("a broken chain refuses start");
    let text = err.to_string();
    match err {
        AuditError::Chain { chain: source, .. } => (source.file, source.line, text),
        other => panic!("expected a broken chain, got {other:?}"),
    }
}

/// After a recovery of `torn` lines behind 3 good ones: the verifier agrees, the chain goes
/// on, and the next start finds nothing to recover.
fn recovered_and_goes_on(mut log: AuditLog, dir: &std::path::Path, clock: &TestClock, torn: u64) {
    let summary = verify(dir);
    assert_eq!((summary.lines, summary.recovered), (4, torn));
    append_n(&mut log, 1);
    drop(log);
    let (_, report) = open(dir, clock);
    assert_eq!((report.earlier_recoveries, report.recovered), (torn, None));
    assert_eq!(verify(dir).lines, 5);
}

#[test]
fn a_torn_tail_is_kept_and_a_recovery_line_appended() {
    let scratch = Scratch::new("torn");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 3);
    append_raw(&dir.join(DAY), TORN);
    let before = fs::read(dir.join(DAY)).expect("read");

    let (log, report) = open(&dir, &clock);
    let recovered = report.recovered.expect("recovered");
    assert_eq!(recovered.torn, [torn(DAY, 4, TORN)]);
    assert!(recovered.newline_added);
    assert_eq!((report.lines, recovered.recovery.seq), (3, 3));

    // Nothing truncated: the old bytes, torn ones included, then a newline, then recovery.
    let after = fs::read(dir.join(DAY)).expect("read");
    assert!(after.starts_with(&before));
    assert_eq!(after[before.len()], b'\n');
    let stored = lines(&dir, DAY);
    assert_eq!(stored[3], TORN);
    let Ok(AuditLine::Event(AuditEvent::Recovery { prev, file, .. })) =
        serde_json::from_slice::<AuditLine>(&stored[4])
    else {
        panic!("a recovery line");
    };
    assert_eq!((prev, file.as_str()), (line_hash(&stored[2]), DAY));

    recovered_and_goes_on(log, &dir, &clock, 1);
}

#[test]
fn a_torn_tail_found_the_next_day_is_recovered_into_the_new_file() {
    let scratch = Scratch::new("torn-next-day");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 2);
    append_raw(&dir.join(DAY), TORN);
    clock.set("2026-09-18T09:00:00.000Z");
    let (_, report) = open(&dir, &clock);
    assert_eq!(
        report.recovered.map(|r| r.torn),
        Some(vec![torn(DAY, 3, TORN)])
    );
    // The torn line got its newline in its own file; the recovery is dated, and filed, today.
    assert!(fs::read(dir.join(DAY)).expect("read").ends_with(b"\n"));
    assert_eq!(lines(&dir, "2026-09-18.jsonl").len(), 1);
    assert_eq!(verify(&dir).recovered, 1);
}

#[test]
fn a_torn_line_already_ended_by_an_interrupted_start_is_recovered() {
    // A start that wrote the newline and died before its recovery line.
    let scratch = Scratch::new("terminated");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 3);
    append_raw(&dir.join(DAY), &[TORN, b"\n"].concat());
    let (_, report) = open(&dir, &clock);
    let recovered = report.recovered.expect("recovered");
    assert_eq!(
        (recovered.torn, recovered.newline_added),
        (vec![torn(DAY, 4, TORN)], false)
    );
    let summary = verify(&dir);
    assert_eq!((summary.lines, summary.recovered), (4, 1));
}

fn torn(file: &str, line: u64, bytes: &[u8]) -> TornLine {
    TornLine {
        file: file.into(),
        line,
        torn_bytes: u64::try_from(bytes.len()).expect("len"),
        torn_sha256: line_hash(bytes),
    }
}

/// What power loss inside the last line leaves: the newest file loses that line's newline
/// and its last `keep_out` bytes.
fn cut_last_line(dir: &std::path::Path, keep_out: usize) {
    let name = day_files(dir).pop().expect("a day file");
    let bytes = fs::read(dir.join(&name)).expect("read");
    let body = bytes.strip_suffix(b"\n").expect("a whole line at the end");
    fs::write(dir.join(&name), &body[..body.len() - keep_out]).expect("cut");
}

#[test]
fn recovery_lines_cut_short_in_turn_are_all_named_at_the_next_start() {
    let scratch = Scratch::new("torn-recoveries");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 3);
    let acknowledged = fs::read(dir.join(DAY)).expect("read");
    append_raw(&dir.join(DAY), TORN);
    // Three starts, each cut short inside its recovery line; the third on the next day,
    // so its recovery line is in a file of its own.
    for start in 1..=3 {
        if start == 3 {
            clock.set("2026-09-18T07:00:00.000Z");
        }
        let (log, report) = open(&dir, &clock);
        drop(log);
        let recovered = report.recovered.expect("recovered");
        assert_eq!(recovered.torn.len(), start, "start {start}");
        assert_eq!(recovered.torn[0], torn(DAY, 4, TORN));
        cut_last_line(&dir, 9 * start);
    }
    let (log, report) = open(&dir, &clock);
    let recovered = report.recovered.expect("recovered");
    let day1 = lines(&dir, DAY);
    let day2 = lines(&dir, "2026-09-18.jsonl");
    assert_eq!(
        recovered.torn,
        [
            torn(DAY, 4, TORN),
            torn(DAY, 5, &day1[4]),
            torn(DAY, 6, &day1[5]),
            torn("2026-09-18.jsonl", 1, &day2[0]),
        ]
    );
    assert!(recovered.newline_added);
    assert_eq!((report.lines, recovered.recovery.seq), (3, 3));
    let Ok(AuditLine::Event(AuditEvent::Recovery {
        prev, interrupted, ..
    })) = AuditLine::from_slice(&day2[1])
    else {
        panic!("a recovery line");
    };
    assert_eq!((prev, interrupted.len()), (line_hash(&day1[2]), 3));
    // Nothing acknowledged is lost, and bxctl's verifier agrees with the start.
    assert!(
        fs::read(dir.join(DAY))
            .expect("read")
            .starts_with(&acknowledged)
    );
    recovered_and_goes_on(log, &dir, &clock, 4);
}

#[test]
fn a_torn_recovery_line_already_ended_by_an_interrupted_start_is_recovered() {
    let scratch = Scratch::new("torn-recovery-ended");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 3);
    let cut = b"{\"kind\":\"recovery\",\"seq\":3,\"ti";
    append_raw(&dir.join(DAY), &[TORN, b"\n", cut, b"\n"].concat());
    let (_, report) = open(&dir, &clock);
    let recovered = report.recovered.expect("recovered");
    assert_eq!(
        (recovered.torn, recovered.newline_added),
        (vec![torn(DAY, 4, TORN), torn(DAY, 5, cut)], false)
    );
    assert_eq!(verify(&dir).recovered, 2);
}

#[test]
fn a_torn_line_followed_by_anything_but_a_recovery_line_refuses_start() {
    let scratch = Scratch::new("double-tear");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 3);
    append_raw(&dir.join(DAY), &[TORN, b"\n{\"seq\":3,\"ti"].concat());
    let before = fs::read(dir.join(DAY)).expect("read");
    let (file, line, text) = chain_error(AuditLog::open_with_clock(&dir, clock.boxed()));
    assert_eq!((file.as_str(), line), (DAY, 4));
    assert!(text.contains("not an audit line"), "{text}");
    assert_eq!(fs::read(dir.join(DAY)).expect("read"), before);
}

#[test]
fn a_tampered_line_refuses_start_naming_file_and_line() {
    let scratch = Scratch::new("tampered");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 2);
    clock.set("2026-09-18T08:00:00.000Z");
    let (mut log, _) = open(&dir, &clock);
    append_n(&mut log, 3);
    drop(log);
    // Change one byte in the middle of the first file: the next line's prev no longer
    // matches, and that is the line named.
    let path = dir.join(DAY);
    let tampered = fs::read(&path)
        .expect("read")
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            if i == 40 && b.is_ascii_digit() {
                b'0' + (b - b'0' + 1) % 10
            } else {
                b
            }
        })
        .collect::<Vec<u8>>();
    let original = fs::read(&path).expect("read");
    assert_ne!(
        tampered, original,
        "byte 40 is a digit of the first line's time"
    );
    fs::write(&path, &tampered).expect("tamper");
    let (file, line, text) = chain_error(AuditLog::open_with_clock(&dir, clock.boxed()));
    assert_eq!((file.as_str(), line), (DAY, 2));
    assert!(
        text.contains(&format!("{} line 2", path.display())),
        "{text}"
    );
    assert!(text.contains("does not start"), "{text}");
    assert_eq!(fs::read(&path).expect("read"), tampered, "nothing changed");

    // A well-formed last line with a wrong prev is tampering too, not a torn line.
    fs::write(&path, &original).expect("restore");
    let last = lines(&dir, "2026-09-18.jsonl").pop().expect("line");
    let mut forged: AuditLine = serde_json::from_slice(&last).expect("parse");
    if let AuditLine::Event(AuditEvent::GrantsLoaded { prev, .. }) = &mut forged {
        *prev = line_hash(b"something else");
    }
    let mut day2: Vec<Vec<u8>> = lines(&dir, "2026-09-18.jsonl");
    day2.pop();
    day2.push(serde_json::to_vec(&forged).expect("encode"));
    fs::write(
        dir.join("2026-09-18.jsonl"),
        [day2.join(&b'\n'), vec![b'\n']].concat(),
    )
    .expect("forge");
    let (file, line, _) = chain_error(AuditLog::open_with_clock(&dir, clock.boxed()));
    assert_eq!((file.as_str(), line), ("2026-09-18.jsonl", 3));
}

#[test]
fn a_torn_line_in_an_older_file_refuses_start() {
    // brokerd only ever leaves a torn line at the very end; anywhere else it was put there.
    let scratch = Scratch::new("torn-older");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 2);
    clock.set("2026-09-18T08:00:00.000Z");
    let (mut log, _) = open(&dir, &clock);
    append_n(&mut log, 1);
    drop(log);
    let path = dir.join(DAY);
    let bytes = fs::read(&path).expect("read");
    fs::write(&path, bytes.strip_suffix(b"\n").expect("newline")).expect("strip");
    let (file, line, text) = chain_error(AuditLog::open_with_clock(&dir, clock.boxed()));
    assert_eq!((file.as_str(), line), (DAY, 2));
    assert!(text.contains("not the newest"), "{text}");
}

#[test]
fn a_second_writer_is_refused_while_the_first_holds_the_lock() {
    let scratch = Scratch::new("lock");
    let dir = scratch.audit();
    let clock = TestClock::at("2026-09-17T08:05:00.000Z");
    let (first, _) = open(&dir, &clock);
    match AuditLog::open_with_clock(&dir, clock.boxed()) {
        Err(e @ AuditError::Locked { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains(&dir.join(".lock").display().to_string()),
                "{text}"
            );
            assert!(text.contains("another brokerd"), "{text}");
        }
        other => panic!("expected the lock to be held, got {other:?}"),
    }
    drop(first);
    let _second = open(&dir, &clock);
}

#[test]
fn symbolic_links_are_refused() {
    let scratch = Scratch::new("symlinks");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 1);
    let outside = scratch.root().join("outside.jsonl");
    fs::rename(dir.join(DAY), &outside).expect("move");
    symlink(&outside, dir.join(DAY)).expect("link");
    let unsafe_reason = |r: Result<(AuditLog, OpenReport), AuditError>| match r {
        Err(AuditError::Unsafe { path, reason }) => (path, reason),
        other => panic!("expected a refusal, got {other:?}"),
    };
    let (path, reason) = unsafe_reason(AuditLog::open_with_clock(&dir, clock.boxed()));
    assert_eq!(
        (path, reason.as_str()),
        (dir.join(DAY), "it is a symbolic link")
    );

    // A link planted for the next day's file while brokerd runs is not followed either.
    fs::remove_file(dir.join(DAY)).expect("unlink");
    fs::rename(&outside, dir.join(DAY)).expect("move back");
    let (mut log, _) = open(&dir, &clock);
    let target = scratch.root().join("target");
    symlink(&target, dir.join("2026-09-18.jsonl")).expect("link");
    clock.set("2026-09-18T08:00:00.000Z");
    let err = log.append(grants).expect_err("refused");
    assert!(matches!(err, AuditError::Unsafe { .. }), "{err}");
    assert!(!target.exists());
    drop(log);

    // The audit directory itself.
    let real = scratch.root().join("real");
    fs::create_dir(&real).expect("mkdir");
    let linked = scratch.root().join("linked");
    symlink(&real, &linked).expect("link");
    let (path, reason) = unsafe_reason(AuditLog::open_with_clock(&linked, clock.boxed()));
    assert_eq!((path, reason.as_str()), (linked, "it is a symbolic link"));
}

#[test]
fn empty_day_files_are_fine() {
    let scratch = Scratch::new("empty");
    let dir = scratch.audit();
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    // Day files created just before a crash, one before a file with lines, one at the end.
    append_raw(&dir.join("2026-09-15.jsonl"), b"");
    let clock = TestClock::at("2026-09-16T08:00:00.000Z");
    let (mut log, report) = open(&dir, &clock);
    assert_eq!((report.files, report.lines), (1, 0));
    append_n(&mut log, 2);
    drop(log);
    append_raw(&dir.join("2026-09-17.jsonl"), b"");
    let (mut log, report) = open(&dir, &clock);
    assert_eq!((report.files, report.lines, report.recovered), (3, 2, None));
    clock.set("2026-09-17T08:00:00.000Z");
    append_n(&mut log, 1);
    assert_eq!(lines(&dir, "2026-09-17.jsonl").len(), 1);
    assert_eq!(verify(&dir).lines, 3);
}

#[test]
fn what_brokerd_did_not_write_is_refused() {
    let scratch = Scratch::new("foreign");
    let dir = scratch.audit();
    let clock = log_of(&scratch, 1);
    let refused = |why: &str| match AuditLog::open_with_clock(&dir, clock.boxed()) {
        Err(AuditError::Unsafe { reason, .. }) => assert!(reason.contains(why), "{reason}"),
        other => panic!("expected a refusal ({why}), got {other:?}"),
    };

    // Other names are ignored, but any other *.jsonl would sit somewhere in the chain.
    append_raw(&dir.join("README"), b"notes");
    append_raw(&dir.join("notes.jsonl"), b"");
    refused("YYYY-MM-DD.jsonl");
    append_raw(&dir.join("2026-02-30.jsonl"), b"");
    fs::remove_file(dir.join("notes.jsonl")).expect("rm");
    refused("YYYY-MM-DD.jsonl");
    fs::remove_file(dir.join("2026-02-30.jsonl")).expect("rm");

    fs::set_permissions(dir.join(DAY), fs::Permissions::from_mode(0o640)).expect("chmod");
    refused("open to group or others");
    fs::set_permissions(dir.join(DAY), fs::Permissions::from_mode(0o600)).expect("chmod");

    fs::set_permissions(&dir, fs::Permissions::from_mode(0o770)).expect("chmod");
    refused("writable by group or others");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");

    assert_eq!(open(&dir, &clock).1.lines, 1);
    assert_eq!(day_files(&dir), [DAY]);
}
