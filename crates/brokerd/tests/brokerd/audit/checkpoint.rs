//! The checkpoint (docs/decisions.md A8): written at a link, checked against the bytes at
//! the next open, which then verifies and reads only the lines after it; a torn or garbled
//! checkpoint, or one that disagrees with the bytes, refuses the open and changes nothing;
//! the whole verification while brokerd serves checks it too.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use brokerd::audit::{self, AuditError, AuditLog, OpenReport, Problem};
use proto::TornLine;
use proto::chain::line_hash;
use proto::checkpoint::{self, Checkpoint};

use super::{Scratch, TestClock, append_n, append_raw, day_files, lines, open, verify};

const DAY: &str = "2026-09-17.jsonl";
const NEXT_DAY: &str = "2026-09-18.jsonl";
const TORN: &[u8] = b"{\"kind\":\"grants_loaded\",\"seq\":9,\"ti";

/// A log of `n` lines on 2026-09-17 with a checkpoint at its last line, then `after` more.
fn checkpointed(scratch: &Scratch, n: usize, after: usize) -> (TestClock, Checkpoint) {
    let clock = TestClock::at("2026-09-17T08:05:00.000Z");
    let (mut log, _) = open(&scratch.audit(), &clock);
    append_n(&mut log, n);
    let cp = write_at_end(&log);
    append_n(&mut log, after);
    (clock, cp)
}

fn write_at_end(log: &AuditLog) -> Checkpoint {
    let at = log.position().expect("a line");
    audit::write_checkpoint(log.dir(), &at, Vec::new()).expect("checkpoint")
}

fn cp_file(dir: &Path) -> PathBuf {
    dir.join(checkpoint::FILE)
}

/// Rewrites the checkpoint with `change` made to it, hashed as brokerd hashes it.
fn rewrite(dir: &Path, change: impl FnOnce(&mut Checkpoint)) {
    let mut cp = Checkpoint::decode(&fs::read(cp_file(dir)).expect("read")).expect("decode");
    change(&mut cp);
    fs::write(cp_file(dir), cp.encode()).expect("write");
}

/// A change made to a checkpoint.
type Change = Box<dyn Fn(&mut Checkpoint)>;

fn refused(result: Result<(AuditLog, OpenReport), AuditError>) -> (Problem, String) {
    let err = result.expect_err("refused");
    let text = err.to_string();
    match err {
        AuditError::Checkpoint { problem, .. } => (problem, text),
        other => panic!("expected a checkpoint error, got {other:?}"),
    }
}

/// `body` as a checkpoint file holds it, with its hash line.
fn hashed(body: &[u8]) -> Vec<u8> {
    let mut bytes = body.to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(proto::Hash32::digest(body).to_hex().as_bytes());
    bytes.push(b'\n');
    bytes
}

/// Every byte of every file in the directory, by name.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<_> = fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().into_string().expect("utf-8");
            (name, fs::read(e.path()).unwrap_or_default())
        })
        .collect();
    all.sort();
    all
}

/// Bytes of lines `from..=to` (1-based) of `name`, with their newlines.
fn bytes_of(dir: &Path, name: &str, from: usize, to: usize) -> u64 {
    lines(dir, name)[from - 1..to]
        .iter()
        .map(|l| u64::try_from(l.len() + 1).expect("length"))
        .sum()
}

#[test]
fn a_start_verifies_and_reads_only_past_the_checkpoint() {
    let scratch = Scratch::new("cp-past");
    let dir = scratch.audit();
    let (clock, cp) = checkpointed(&scratch, 5, 3);
    assert_eq!((cp.file.as_str(), cp.line, cp.seq), (DAY, 5, 4));
    assert_eq!(cp.end, bytes_of(&dir, DAY, 1, 5));
    // A byte changed in line 2, before the checkpoint: the chain is broken there...
    let text = fs::read(dir.join(DAY)).expect("read");
    let line2 = usize::try_from(bytes_of(&dir, DAY, 1, 1)).expect("offset");
    let at = line2
        + text[line2..]
            .windows(10)
            .position(|w| w == b"notes-read")
            .expect("a grant id");
    let mut changed = text.clone();
    changed[at + 9] = b'D';
    assert_ne!(changed, text);
    fs::write(dir.join(DAY), &changed).expect("write");

    // ...and the start, which reads only the 3 lines after the checkpoint, does not see it.
    let (log, report) = open(&dir, &clock);
    assert_eq!(report.from.as_ref().map(|c| c.seq), Some(4));
    assert_eq!(report.read, bytes_of(&dir, DAY, 6, 8));
    assert_eq!((report.lines, report.head.next_seq), (8, 8));
    // The whole verification (brokerd's daily one) does.
    let to = log.position().expect("a line");
    let whole = audit::verify_whole(&dir, &to, &AtomicBool::new(false), &mut |_| {});
    match whole {
        Err(AuditError::Chain { chain: source, .. }) => {
            assert_eq!((source.file, source.line), (DAY.into(), 3))
        }
        other => panic!("expected a broken chain at line 3, got {other:?}"),
    }
    drop(log);
    // Without the checkpoint, the start verifies from the first line and refuses.
    fs::remove_file(cp_file(&dir)).expect("remove");
    let err = AuditLog::open_with_clock(&dir, clock.boxed()).expect_err("broken");
    assert!(matches!(err, AuditError::Chain { .. }), "{err}");
}

#[test]
fn a_start_from_a_checkpoint_recovers_a_torn_tail_with_the_right_line_numbers() {
    let scratch = Scratch::new("cp-torn-tail");
    let dir = scratch.audit();
    let (clock, _) = checkpointed(&scratch, 4, 2);
    append_raw(&dir.join(DAY), TORN);
    let (log, report) = open(&dir, &clock);
    let recovered = report.recovered.expect("recovered");
    assert_eq!(
        recovered.torn,
        [TornLine {
            file: DAY.into(),
            line: 7,
            torn_bytes: u64::try_from(TORN.len()).expect("length"),
            torn_sha256: line_hash(TORN),
        }]
    );
    // The writer knows where its lines end: a checkpoint at the recovery line agrees.
    let cp = write_at_end(&log);
    assert_eq!((cp.line, cp.seq, cp.recovered), (8, 6, 1));
    drop(log);
    let (_, report) = open(&dir, &clock);
    assert_eq!((report.from.map(|c| c.seq), report.read), (Some(6), 0));
    assert_eq!((report.lines, report.earlier_recoveries), (7, 1));
    let summary = verify(&dir);
    assert_eq!((summary.lines, summary.recovered), (7, 1));
}

#[test]
fn a_restart_after_a_day_change_verifies_from_yesterdays_file() {
    let scratch = Scratch::new("cp-day");
    let dir = scratch.audit();
    let (clock, cp) = checkpointed(&scratch, 3, 0);
    assert_eq!(cp.file, DAY);
    // The next day: a start (from yesterday's checkpoint), lines in today's file.
    clock.set("2026-09-18T00:00:01.000Z");
    let (mut log, report) = open(&dir, &clock);
    assert_eq!(
        (report.from.map(|c| c.file), report.read),
        (Some(DAY.into()), 0)
    );
    append_n(&mut log, 4);
    drop(log);
    assert_eq!(day_files(&dir), [DAY, NEXT_DAY]);
    let (mut log, report) = open(&dir, &clock);
    assert_eq!(report.from.map(|c| (c.file, c.line)), Some((DAY.into(), 3)));
    assert_eq!(report.read, bytes_of(&dir, NEXT_DAY, 1, 4));
    assert_eq!(
        (report.files, report.lines, report.head.next_seq),
        (2, 7, 7)
    );
    // The chain goes on across the day, from the checkpoint's head.
    append_n(&mut log, 1);
    let cp = write_at_end(&log);
    assert_eq!((cp.file.as_str(), cp.line, cp.seq), (NEXT_DAY, 5, 7));
    drop(log);
    let (_, report) = open(&dir, &clock);
    assert_eq!((report.read, report.lines), (0, 8));
    assert_eq!(verify(&dir).lines, 8);
}

#[test]
fn a_torn_or_garbled_checkpoint_refuses_start_and_says_how_to_recover() {
    let scratch = Scratch::new("cp-torn");
    let dir = scratch.audit();
    let (clock, _) = checkpointed(&scratch, 3, 1);
    let good = fs::read(cp_file(&dir)).expect("read");
    // A digit of its seq changed: still a checkpoint, only its hash line tells.
    let mut garbled = good.clone();
    let digit = garbled
        .windows(6)
        .position(|w| w == b"\"seq\":")
        .expect("a seq")
        + 6;
    garbled[digit] = if garbled[digit] == b'9' {
        b'8'
    } else {
        garbled[digit] + 1
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("torn", good[..good.len() - 7].to_vec()),
        (
            "without its hash",
            good[..=good.iter().position(|&b| b == b'\n').expect("nl")].to_vec(),
        ),
        ("empty", Vec::new()),
        ("garbled", garbled),
        ("not a checkpoint", hashed(b"{\"v\":1,\"fi")),
        ("another version", {
            let mut cp = Checkpoint::decode(&good).expect("decode");
            cp.v = 2;
            cp.encode()
        }),
    ];
    for (what, bytes) in cases {
        fs::write(cp_file(&dir), &bytes).expect("write");
        let before = snapshot(&dir);
        let (problem, text) = refused(AuditLog::open_with_clock(&dir, clock.boxed()));
        assert!(
            matches!(problem, Problem::Unreadable(_)),
            "{what}: {problem:?}"
        );
        assert!(
            text.contains(&format!("remove {}", cp_file(&dir).display()))
                && text.contains("bxctl audit verify"),
            "{what}: says how to recover: {text}"
        );
        assert_eq!(snapshot(&dir), before, "{what}: nothing changed");
    }
    // Open to others, or a link: refused as any state file is.
    fs::write(cp_file(&dir), &good).expect("write");
    fs::set_permissions(cp_file(&dir), fs::Permissions::from_mode(0o644)).expect("chmod");
    let (problem, _) = refused(AuditLog::open_with_clock(&dir, clock.boxed()));
    assert!(matches!(problem, Problem::Unreadable(_)), "{problem:?}");
    fs::remove_file(cp_file(&dir)).expect("remove");
    fs::write(scratch.root().join("elsewhere"), &good).expect("write");
    std::os::unix::fs::symlink(scratch.root().join("elsewhere"), cp_file(&dir)).expect("link");
    let (problem, text) = refused(AuditLog::open_with_clock(&dir, clock.boxed()));
    assert!(matches!(problem, Problem::Unreadable(_)), "{problem:?}");
    assert!(text.contains("symbolic link"), "{text}");
    // Removed, as the message says: the whole log is verified, and the start goes on.
    fs::remove_file(cp_file(&dir)).expect("remove");
    let (_, report) = open(&dir, &clock);
    assert!(report.from.is_none());
    assert_eq!((report.lines, report.read), (4, bytes_of(&dir, DAY, 1, 4)));
}

#[test]
fn a_checkpoint_that_disagrees_with_the_bytes_refuses_start() {
    let scratch = Scratch::new("cp-mismatch");
    let dir = scratch.audit();
    let (clock, cp) = checkpointed(&scratch, 3, 2);
    let other = line_hash(&lines(&dir, DAY)[1]);
    let changes: Vec<(&str, Change)> = vec![
        ("another seq", Box::new(|c| c.seq += 1)),
        ("another line's hash", Box::new(move |c| c.hash = other)),
        ("an offset inside a line", Box::new(|c| c.end -= 3)),
        ("an offset past the file", Box::new(|c| c.end += 1 << 20)),
        (
            "a day file not there",
            Box::new(|c| c.file = "2026-09-16.jsonl".into()),
        ),
    ];
    for (what, change) in changes {
        fs::write(cp_file(&dir), cp.encode()).expect("write");
        rewrite(&dir, |c| change(c));
        let before = snapshot(&dir);
        let (problem, text) = refused(AuditLog::open_with_clock(&dir, clock.boxed()));
        assert!(
            matches!(problem, Problem::Mismatch(_)),
            "{what}: {problem:?}"
        );
        assert!(
            text.contains("does not match the audit log"),
            "{what}: {text}"
        );
        assert_eq!(snapshot(&dir), before, "{what}: nothing changed");
    }
    // A name that is not a day file's is refused before any path is made of it.
    rewrite(&dir, |c| c.file = "../outside.jsonl".into());
    let (problem, _) = refused(AuditLog::open_with_clock(&dir, clock.boxed()));
    assert!(matches!(problem, Problem::Unreadable(_)), "{problem:?}");
    // The checkpoint as written opens.
    fs::write(cp_file(&dir), cp.encode()).expect("write");
    let (_, report) = open(&dir, &clock);
    assert_eq!(report.from, Some(cp));
}

#[test]
fn the_whole_verification_checks_the_checkpoint_against_the_bytes() {
    let scratch = Scratch::new("cp-whole");
    let dir = scratch.audit();
    let (clock, cp) = checkpointed(&scratch, 3, 2);
    let (log, _) = open(&dir, &clock);
    let to = log.position().expect("a line");
    let stop = AtomicBool::new(false);
    let whole = audit::verify_whole(&dir, &to, &stop, &mut |_| {}).expect("good");
    assert_eq!((whole.lines, whole.checkpoint), (5, Some(2)));
    // A checkpoint whose line number is not its line's: the start cannot tell (it reads
    // no line before it), the whole verification can.
    rewrite(&dir, |c| c.line = 2);
    let err = audit::verify_whole(&dir, &to, &stop, &mut |_| {}).expect_err("disagrees");
    assert!(
        matches!(
            err,
            AuditError::Checkpoint {
                problem: Problem::Mismatch(_),
                ..
            }
        ),
        "{err}"
    );
    // One whose hash is not its line's (the position, line and seq right): only the line
    // read at its offset can tell.
    fs::write(cp_file(&dir), cp.encode()).expect("write");
    let other = line_hash(&lines(&dir, DAY)[0]);
    rewrite(&dir, |c| c.hash = other);
    let err = audit::verify_whole(&dir, &to, &stop, &mut |_| {}).expect_err("disagrees");
    assert!(
        matches!(
            err,
            AuditError::Checkpoint {
                problem: Problem::Mismatch(_),
                ..
            }
        ),
        "{err}"
    );
    // One that names a line that is not the link of its seq (the next line, seq kept).
    fs::write(cp_file(&dir), cp.encode()).expect("write");
    let next = lines(&dir, DAY)[3].clone();
    rewrite(&dir, |c| {
        c.end += u64::try_from(next.len() + 1).expect("length");
        c.line += 1;
        c.hash = line_hash(&next);
    });
    let err = audit::verify_whole(&dir, &to, &stop, &mut |_| {}).expect_err("disagrees");
    assert!(
        matches!(
            err,
            AuditError::Checkpoint {
                problem: Problem::Mismatch(_),
                ..
            }
        ),
        "{err}"
    );
    // Stopping ends it (checked before each file and every 4096 lines).
    fs::write(cp_file(&dir), cp.encode()).expect("write");
    let err =
        audit::verify_whole(&dir, &to, &AtomicBool::new(true), &mut |_| {}).expect_err("stopped");
    assert!(matches!(err, AuditError::Stopped), "{err}");
    drop(log);
}
