//! A start as brokerd's makes it (`brokerd::start::restore`): the audit log verified from its
//! checkpoint, and what the lines before the checkpoint left still there after a restart
//! that reads none of them (docs/decisions.md A8): the uses of kept reports' calls (W9), in
//! the checkpoint, and the accounting records of their denials (X8), in the accounting
//! file. A log that starts anew (moved aside with its checkpoint) still forgets the kept
//! reports.

use std::path::PathBuf;
use std::time::Duration;

use brokerd::audit::AuditLog;
use brokerd::context::Attested;
use brokerd::context::accounting::{Accounting, OWNER};
use brokerd::context::witness::{Store, Witness};
use brokerd::start::restore::{Restored, restore};
use proto::attest::{ChatMessage, CompletionId, WitnessRef, WitnessReport};
use proto::{DecisionRecord, DenyReason, ToolCall, ToolResponse, composed};

const FETCH: &str = "{\"url\":\"https://example.org/\"}";

struct Dirs(PathBuf);

impl Dirs {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("bx-restore-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        Self(d)
    }
    fn audit(&self) -> PathBuf {
        self.0.join("audit")
    }
    fn accounting(&self) -> Result<Accounting, brokerd::Error> {
        Accounting::open(&self.0.join("records.jsonl"), 64, 8).map_err(brokerd::Error::Accounting)
    }
    /// A start: the audit lock, the store (keeping 4 reports), the pass, the accounting.
    fn start(&self) -> Restored {
        let locked = AuditLog::lock(&self.audit()).expect("lock");
        let (store, opened) = Store::open(&self.0.join("witness"), 4).expect("store");
        let r = restore(
            locked,
            Box::new(proto::Timestamp::now),
            store,
            opened.kept,
            || self.accounting(),
        )
        .expect("start");
        r.checkpoint.as_ref().expect("a checkpoint written");
        r
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Completion `n`: one http_fetch call with the model's id `f{n}`.
fn report(n: u8) -> WitnessReport {
    let call = ToolCall {
        id: format!("f{n}"),
        name: "http_fetch".into(),
        arguments: FETCH.into(),
    };
    WitnessReport {
        completion: CompletionId::from_random([n; 16]),
        prompt: vec![ChatMessage::user("send it").digest()],
        answer: ChatMessage::assistant(None, None, &[&call]).digest(),
        calls: vec![call],
        finish: "tool_calls".into(),
        runnable: true,
        forms: Vec::new(),
    }
}

fn at(n: u8) -> WitnessRef {
    WitnessRef {
        completion: CompletionId::from_random([n; 16]),
        index: 0,
    }
}

/// What brokerd does for call `n` while it serves: claimed, decided `decision` (its audit
/// line naming the witnessed call), and answered (a denial's record taken in memory only).
fn serve(a: &Attested, log: &mut AuditLog, n: u8, decision: &DecisionRecord) {
    let claimed = a.claim(Some(&at(n)), "http_fetch", FETCH).expect("claimed");
    crate::witness::decision_line(
        log,
        u64::from(n),
        ("http_fetch", FETCH),
        Some(at(n)),
        decision,
    );
    let answer = brokerd::policy::denied(decision).unwrap_or_else(|| ToolResponse::Result {
        content: "ok".into(),
        class: proto::DataClass::Public,
        untrusted: false,
        truncated: false,
    });
    a.returned(Some(&claimed), &answer, None, OWNER, &[])
        .expect("returned");
}

fn refused() -> DecisionRecord {
    DecisionRecord::Denied {
        reason: DenyReason::ApprovalRefused,
        grant: Some("web".into()),
        detail: Some("owner refused".into()),
    }
}

/// The running brokerd after `start`: the witness and accounting it serves with.
fn serving(r: Restored, d: &Dirs) -> (Attested, AuditLog) {
    let witness = Witness::new(r.store, Duration::from_millis(10));
    (
        Attested::new(witness, r.accounting, d.0.join("no-core.md")),
        r.audit,
    )
}

fn run_state(a: &Attested, n: u8) -> Option<DenyReason> {
    a.claim(Some(&at(n)), "http_fetch", FETCH)
        .err()
        .map(|(r, _)| r)
}

#[test]
fn a_call_run_before_the_checkpoint_is_already_run_after_a_restart_that_reads_past_it() {
    let d = Dirs::new("uses");
    let (a, mut log) = serving(d.start(), &d);
    a.owner(ChatMessage::user("send it").digest())
        .expect("owner");
    for n in 1..=3 {
        a.record(report(n)).expect("disk").expect("recorded");
    }
    let allowed = DecisionRecord::Allowed {
        grant: "web".into(),
    };
    serve(&a, &mut log, 1, &allowed);
    serve(&a, &mut log, 2, &refused());
    drop((a, log));
    // The start after it reads both decision lines and writes a checkpoint after them.
    let r = d.start();
    assert_eq!((r.uses, r.report.from.as_ref().map(|c| c.seq)), (2, None));
    let cp = r
        .checkpoint
        .as_ref()
        .expect("written")
        .clone()
        .expect("a checkpoint");
    assert_eq!(cp.used, [at(1), at(2)]);
    drop(r);
    // The next start reads none of them: the uses come from the checkpoint.
    let r = d.start();
    assert_eq!(r.report.from.as_ref().map(|c| c.seq), Some(cp.seq));
    assert_eq!((r.report.read, r.uses), (0, 2));
    let (a, _log) = serving(r, &d);
    assert_eq!(run_state(&a, 1), Some(DenyReason::AlreadyRun));
    assert_eq!(run_state(&a, 2), Some(DenyReason::AlreadyRun));
    assert_eq!(run_state(&a, 3), None, "a call not run before runs once");
    assert_eq!(run_state(&a, 3), Some(DenyReason::AlreadyRun));
}

#[test]
fn a_denials_record_is_accounted_after_a_restart_that_reads_past_its_line() {
    let d = Dirs::new("denials");
    let (a, mut log) = serving(d.start(), &d);
    a.owner(ChatMessage::user("send it").digest())
        .expect("owner");
    a.record(report(1)).expect("disk").expect("recorded");
    serve(&a, &mut log, 1, &refused());
    let notice = composed::tool_message(
        "f1",
        &brokerd::policy::denied(&refused()).expect("a denial"),
    )
    .digest();
    drop((a, log));
    assert_eq!(
        d.accounting().expect("open").label(&notice),
        None,
        "in memory only"
    );
    // The start after it accounts it again, in the file, before the checkpoint covers it.
    let r = d.start();
    assert_eq!((r.denials, r.again), (1, 1));
    drop(r);
    assert_eq!(d.accounting().expect("open").label(&notice), Some(OWNER));
    // A start past the checkpoint finds no denial in what it reads, and the record stays.
    let r = d.start();
    assert_eq!((r.denials, r.again, r.report.read), (0, 0, 0));
    assert_eq!(r.accounting.label(&notice), Some(OWNER));
}

#[test]
fn a_log_moved_aside_with_its_checkpoint_starts_anew_and_forgets_the_kept_reports() {
    let d = Dirs::new("anew");
    let (a, mut log) = serving(d.start(), &d);
    a.owner(ChatMessage::user("send it").digest())
        .expect("owner");
    a.record(report(1)).expect("disk").expect("recorded");
    a.record(report(2)).expect("disk").expect("recorded");
    serve(
        &a,
        &mut log,
        1,
        &DecisionRecord::Allowed {
            grant: "web".into(),
        },
    );
    drop((a, log));
    let _ = d.start();
    // The owner moves the log aside (A3), its checkpoint with it.
    std::fs::rename(d.audit(), d.0.join("audit.broken")).expect("move aside");
    let r = d.start();
    assert!(r.report.from.is_none());
    assert_eq!((r.report.lines, r.forgotten), (0, 2));
    let (a, _log) = serving(r, &d);
    assert_eq!(run_state(&a, 2), Some(DenyReason::NotWitnessed));
}
