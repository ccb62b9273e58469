//! The witness store and the decision a tool request's witness gets: on disk before it is
//! acknowledged, bounded, read back after a restart (a torn last line cut off, any other bad
//! line refusing the start), and each witnessed call used at most once: marked under the
//! store's lock, durable in its decision's audit line, marked again from every audit file at
//! start (docs/decisions.md W9).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use brokerd::audit::{AuditLog, Clock};
use brokerd::context::witness::{Store, StoreError, Witness};
use proto::attest::{CompletionId, WitnessRef, WitnessReport};
use proto::{
    AuditLine, AuditRecord, CallId, DataClass, DecisionRecord, DenyReason, Hash32, SessionId,
    Timestamp, ToolCall,
};

/// The arguments of every report's call.
const ARGS: &str = "{\"path\": \"/n\"}";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bx-witness-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

fn id(n: u8) -> CompletionId {
    CompletionId::from_random([n; 16])
}

fn report(n: u8, finish: &str) -> WitnessReport {
    WitnessReport {
        completion: id(n),
        prompt: vec![Hash32::digest(b"system")],
        answer: Hash32::digest(b"answer"),
        calls: vec![ToolCall {
            id: "c0".into(),
            name: "read_file".into(),
            arguments: "{\"path\": \"/n\"}".into(),
        }],
        finish: finish.into(),
        runnable: finish == "tool_calls",
        forms: Vec::new(),
    }
}

fn at(n: u8, index: u32) -> WitnessRef {
    WitnessRef {
        completion: id(n),
        index,
    }
}

fn reason(got: Result<(), (DenyReason, String)>) -> Option<DenyReason> {
    got.err().map(|(r, _)| r)
}

#[test]
fn a_witnessed_call_runs_once_and_anything_else_is_denied_with_its_reason() {
    let d = dir("claim");
    let (store, _) = Store::open(&d, 16).expect("open");
    let w = Witness::new(store, Duration::from_millis(200));
    assert_eq!(w.record(report(1, "tool_calls")).expect("disk"), Ok(()));
    assert!(
        w.record(report(1, "tool_calls")).expect("disk").is_err(),
        "once only"
    );
    w.record(report(2, "length"))
        .expect("disk")
        .expect("recorded");
    let args = "{\"path\": \"/n\"}";
    let claim = |r: &WitnessRef, tool: &str, a: &str| reason(w.claim(r, tool, a));
    assert_eq!(
        claim(&at(1, 0), "read_file", "{\"path\":\"/n\"}"),
        Some(DenyReason::WitnessMismatch)
    );
    assert_eq!(
        claim(&at(1, 0), "list_dir", args),
        Some(DenyReason::WitnessMismatch)
    );
    assert_eq!(
        claim(&at(1, 1), "read_file", args),
        Some(DenyReason::NotWitnessed)
    );
    assert_eq!(
        claim(&at(2, 0), "read_file", args),
        Some(DenyReason::WitnessNotRunnable)
    );
    assert_eq!(claim(&at(1, 0), "read_file", args), None);
    assert_eq!(
        claim(&at(1, 0), "read_file", args),
        Some(DenyReason::AlreadyRun)
    );
    // A completion never reported: denied once the wait is over, not before.
    let start = Instant::now();
    assert_eq!(
        claim(&at(9, 0), "read_file", args),
        Some(DenyReason::NotWitnessed)
    );
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(190) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_request_waits_for_a_report_that_arrives_within_the_wait() {
    let d = dir("wait");
    let (store, _) = Store::open(&d, 16).expect("open");
    let w = Arc::new(Witness::new(store, Duration::from_secs(5)));
    let late = w.clone();
    let reporter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        late.record(report(3, "tool_calls"))
            .expect("disk")
            .expect("recorded");
    });
    let start = Instant::now();
    let got = w.claim(&at(3, 0), "read_file", "{\"path\": \"/n\"}");
    assert_eq!(got, Ok(()));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    reporter.join().expect("reporter");
    let _ = std::fs::remove_dir_all(&d);
}

/// A read_file call allowed, as brokerd writes its decision line ([`decision_line`]).
fn decided(log: &mut AuditLog, call: u64, w: Option<WitnessRef>) {
    let allowed = DecisionRecord::Allowed {
        grant: "notes".into(),
    };
    decision_line(log, call, ("read_file", ARGS), w, &allowed);
}

/// A decision line as brokerd writes it for the call `(tool, arguments)` that passed the
/// witness check (`w`), or for one denied before it (`None`).
pub(crate) fn decision_line(
    log: &mut AuditLog,
    call: u64,
    (tool, arguments): (&str, &str),
    w: Option<WitnessRef>,
    decision: &DecisionRecord,
) {
    log.append(|seq, time, prev| {
        AuditLine::Decision(AuditRecord {
            seq,
            time,
            prev,
            session: SessionId::new("s-1").expect("session"),
            call: CallId(call),
            tool: tool.into(),
            arguments: arguments.into(),
            session_taint: DataClass::Private,
            decision: decision.clone(),
            canonical: None,
            witness: w,
            untrusted: false,
            write: None,
        })
    })
    .expect("append");
}

/// A clock that starts on one day and moves to the next when `next_day` is set.
fn two_days(next_day: &Arc<AtomicBool>) -> Clock {
    let next = Arc::clone(next_day);
    Box::new(move || {
        let day = if next.load(Ordering::SeqCst) {
            "18"
        } else {
            "17"
        };
        Timestamp::parse(&format!("2026-09-{day}T12:00:00.000Z")).expect("time")
    })
}

/// The store's file holds no `used` line.
fn no_use_lines(d: &Path) {
    let text = std::fs::read_to_string(d.join("witness.jsonl")).expect("file");
    assert!(
        !text.contains("\"used\""),
        "a use line in the store:\n{text}"
    );
}

#[test]
fn records_survive_a_restart_the_oldest_past_the_bound_are_forgotten_and_uses_come_from_the_audit_log()
 {
    let d = dir("restart");
    let audit = d.join("audit");
    let next_day = Arc::new(AtomicBool::new(false));
    {
        let (store, opened) = Store::open(&d.join("w"), 3).expect("open");
        assert_eq!((opened.kept, opened.torn), (0, false));
        let w = Witness::new(store, Duration::from_millis(50));
        let (mut log, _) = AuditLog::open_with_clock(&audit, two_days(&next_day)).expect("audit");
        // Enough reports to rewrite the file (twice the bound): 1 to 5 are forgotten.
        for n in 1..=8 {
            w.record(report(n, "tool_calls"))
                .expect("disk")
                .expect("recorded");
        }
        assert_eq!(
            reason(w.claim(&at(1, 0), "read_file", ARGS)),
            Some(DenyReason::NotWitnessed)
        );
        // Used on the first day; then a denial before the witness check, which names none,
        // and a use of a record that is gone by the restart.
        assert_eq!(reason(w.claim(&at(6, 0), "read_file", ARGS)), None);
        decided(&mut log, 1, Some(at(6, 0)));
        decided(&mut log, 2, None);
        decided(&mut log, 3, Some(at(2, 0)));
        // And on the next day, in the next audit file.
        next_day.store(true, Ordering::SeqCst);
        assert_eq!(reason(w.claim(&at(8, 0), "read_file", ARGS)), None);
        decided(&mut log, 4, Some(at(8, 0)));
    }
    let lines = std::fs::read_to_string(d.join("w/witness.jsonl"))
        .expect("file")
        .lines()
        .count();
    assert!(lines <= 6, "rewritten to what is kept: {lines} lines");
    no_use_lines(&d.join("w"));
    let mut days: Vec<_> = std::fs::read_dir(&audit)
        .expect("audit dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    days.sort();
    assert_eq!(days, ["2026-09-17.jsonl", "2026-09-18.jsonl"]);

    // The restart, as brokerd's start makes it: the audit lock, the store, then the uses
    // of every decision line of every audit file.
    let locked = AuditLog::lock(&audit).expect("lock");
    let (mut store, opened) = Store::open(&d.join("w"), 3).expect("reopen");
    assert_eq!(opened.kept, 3);
    let mut uses = 0;
    let _log = locked
        .open(two_days(&next_day), &mut |line| {
            uses += usize::from(store.mark_audited(line));
        })
        .expect("audit");
    assert_eq!(uses, 2, "the uses of kept records, from both audit files");
    let w = Witness::new(store, Duration::from_millis(50));
    let claim = |n, a: &str| reason(w.claim(&at(n, 0), "read_file", a));
    assert_eq!(
        claim(8, ARGS),
        Some(DenyReason::AlreadyRun),
        "the use of the newest audit file"
    );
    assert_eq!(
        claim(6, ARGS),
        Some(DenyReason::AlreadyRun),
        "the use of an older audit file"
    );
    assert_eq!(
        claim(7, ARGS),
        None,
        "a call recorded before the restart runs once"
    );
    assert_eq!(claim(7, ARGS), Some(DenyReason::AlreadyRun));
    assert_eq!(
        claim(4, ARGS),
        Some(DenyReason::NotWitnessed),
        "forgotten past the bound"
    );
    no_use_lines(&d.join("w"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_use_line_of_an_older_store_is_a_use_and_the_rewrite_keeps_it() {
    let d = dir("legacy");
    let line = |v: serde_json::Value| format!("{v}\n");
    let mut old = line(serde_json::json!({"type": "report", "report": report(1, "tool_calls")}));
    old += &line(serde_json::json!({"type": "used", "completion": id(1), "index": 0}));
    // Uses of records no longer kept: they count as lines, so the next report rewrites.
    for n in 0..5 {
        old += &line(serde_json::json!({"type": "used", "completion": id(100 + n), "index": 0}));
    }
    std::fs::write(d.join("witness.jsonl"), old).expect("old store");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(d.join("witness.jsonl"), mode).expect("0600");
    let used = |text: &str| text.lines().filter(|l| l.contains("\"used\"")).count();
    {
        let (store, opened) = Store::open(&d, 3).expect("an older store loads");
        assert_eq!(opened.kept, 1);
        let w = Witness::new(store, Duration::from_millis(50));
        assert_eq!(
            reason(w.claim(&at(1, 0), "read_file", ARGS)),
            Some(DenyReason::AlreadyRun)
        );
        w.record(report(2, "tool_calls"))
            .expect("disk")
            .expect("recorded");
        assert_eq!(reason(w.claim(&at(2, 0), "read_file", ARGS)), None);
    }
    let text = std::fs::read_to_string(d.join("witness.jsonl")).expect("file");
    assert_eq!(text.lines().count(), 3, "rewritten:\n{text}");
    assert_eq!(
        used(&text),
        1,
        "the kept record's old use stays, no new one:\n{text}"
    );
    let (store, _) = Store::open(&d, 3).expect("reopen");
    let w = Witness::new(store, Duration::from_millis(50));
    assert_eq!(
        reason(w.claim(&at(1, 0), "read_file", ARGS)),
        Some(DenyReason::AlreadyRun),
        "still used after the rewrite"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn of_concurrent_requests_for_one_call_exactly_one_passes() {
    let d = dir("race");
    let (store, _) = Store::open(&d, 64).expect("open");
    let w = Arc::new(Witness::new(store, Duration::from_millis(50)));
    for n in 0..32 {
        w.record(report(n, "tool_calls"))
            .expect("disk")
            .expect("recorded");
        let start = Arc::new(std::sync::Barrier::new(4));
        let passed: usize = (0..4)
            .map(|_| {
                let (w, start) = (Arc::clone(&w), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    w.claim(&at(n, 0), "read_file", ARGS).is_ok()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| usize::from(t.join().expect("thread")))
            .sum();
        assert_eq!(passed, 1, "completion {n}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_torn_last_line_is_cut_off_and_any_other_bad_line_refuses_the_start() {
    let d = dir("torn");
    {
        let (store, _) = Store::open(&d, 8).expect("open");
        let w = Witness::new(store, Duration::from_millis(50));
        w.record(report(1, "tool_calls"))
            .expect("disk")
            .expect("recorded");
    }
    let file = d.join("witness.jsonl");
    let good = std::fs::read(&file).expect("file");
    std::fs::write(&file, [&good[..], b"{\"type\":\"used\",\"compl"].concat()).expect("tear");
    let (_, opened) = Store::open(&d, 8).expect("a torn tail is recovered");
    assert_eq!((opened.kept, opened.torn), (1, true));
    assert_eq!(
        std::fs::read(&file).expect("file"),
        good,
        "cut back to the whole lines"
    );
    std::fs::write(&file, [&b"not json\n"[..], &good[..]].concat()).expect("corrupt");
    let err = Store::open(&d, 8).expect_err("a bad line refuses the start");
    assert!(matches!(err, StoreError::Corrupt { line: 1, .. }), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
