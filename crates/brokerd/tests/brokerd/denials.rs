//! A denied witnessed call's tool message is durable in its decision's audit line
//! (docs/decisions.md X8): the accounting keeps its record in memory only, and brokerd's
//! start accounts it again from the audit line, in the pass that marks the uses (W9), for
//! the calls of the reports the witness store keeps.

use std::path::PathBuf;
use std::time::Duration;

use brokerd::audit::AuditLog;
use brokerd::context::accounting::{Accounting, OWNER};
use brokerd::context::witness::{Store, Witness};
use brokerd::context::{Attested, Rebuilt};
use proto::attest::{ChatMessage, CompletionId, WitnessRef, WitnessReport};
use proto::composed;
use proto::{DecisionRecord, DenyReason, ToolCall, ToolResponse};

const FETCH: &str = "{\"url\":\"https://example.org/\"}";

struct Dirs(PathBuf);

impl Dirs {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("bx-denials-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        Self(d)
    }
    fn records(&self) -> PathBuf {
        self.0.join("records.jsonl")
    }
    fn accounting(&self) -> Accounting {
        Accounting::open(&self.records(), 64, 8).expect("accounting")
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn owner() -> ChatMessage {
    ChatMessage::user("send it")
}

/// Completion `n`, whose answer makes one http_fetch call with the model's id `f{n}`.
fn report(n: u8) -> WitnessReport {
    let call = ToolCall {
        id: format!("f{n}"),
        name: "http_fetch".into(),
        arguments: FETCH.into(),
    };
    WitnessReport {
        completion: CompletionId::from_random([n; 16]),
        prompt: vec![
            composed::system(composed::DEFAULT_CORE).digest(),
            owner().digest(),
        ],
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

/// The decision line brokerd writes for call `n`, naming its witnessed call when `w`.
fn decided(log: &mut AuditLog, n: u8, w: bool, decision: &DecisionRecord) {
    let call = ("http_fetch", FETCH);
    crate::witness::decision_line(log, u64::from(n), call, w.then(|| at(n)), decision);
}

fn denial(reason: DenyReason, detail: &str) -> DecisionRecord {
    DecisionRecord::Denied {
        reason,
        grant: Some("web".into()),
        detail: Some(detail.into()),
    }
}

/// The tool message loopd makes of call `n`'s answer `r`.
fn notice(n: u8, r: &ToolResponse) -> proto::Hash32 {
    composed::tool_message(&format!("f{n}"), r).digest()
}

/// A start as brokerd's makes it: the audit lock, the store, the pass over the audit log,
/// the accounting; what it rebuilt and how many records it wrote again.
fn start(d: &Dirs) -> (Accounting, Rebuilt, usize) {
    let locked = AuditLog::lock(&d.0.join("audit")).expect("lock");
    let (mut store, _) = Store::open(&d.0.join("witness"), 2).expect("store");
    let mut rebuilt = Rebuilt::default();
    let _log = locked
        .open(Box::new(proto::Timestamp::now), &mut |line| {
            rebuilt.visit(&mut store, line);
        })
        .expect("audit");
    let mut accounting = d.accounting();
    let again = accounting.rebuild(&rebuilt.denials).expect("rebuild");
    (accounting, rebuilt, again)
}

#[test]
fn a_denials_tool_message_is_accounted_after_a_restart_from_its_audit_line_alone() {
    let d = Dirs::new("restart");
    let expired = denial(
        DenyReason::ApprovalExpired,
        "the owner did not answer in time",
    );
    let refused = denial(DenyReason::ApprovalRefused, "owner refused");
    let unwitnessed = denial(DenyReason::AlreadyRun, "call 0 was run before");
    let allowed = DecisionRecord::Allowed {
        grant: "web".into(),
    };
    let answers = {
        let (store, _) = Store::open(&d.0.join("witness"), 2).expect("store");
        let witness = Witness::new(store, Duration::from_millis(10));
        let a = Attested::new(witness, d.accounting(), d.0.join("no-core.md"));
        a.owner(owner().digest()).expect("owner");
        let (mut log, _) = AuditLog::open(&d.0.join("audit")).expect("audit");
        // Completion 1 is forgotten by the store's bound (2) once 2 and 3 are recorded.
        for n in 1..=3 {
            a.record(report(n)).expect("disk").expect("recorded");
        }
        let mut answers = Vec::new();
        // An expired ask and a refused one of calls that passed the witness check (the
        // refused one's report is forgotten), and a denial before the check.
        for (n, record, w) in [
            (2, &expired, true),
            (3, &unwitnessed, false),
            (1, &refused, true),
        ] {
            decided(&mut log, n, w, record);
            answers.push(brokerd::policy::denied(record).expect("a denial"));
        }
        assert_eq!(brokerd::policy::denied(&allowed), None);
        // An allowed decision of a kept call is a use, and no denial.
        decided(&mut log, 3, true, &allowed);
        // What brokerd's serving of completion 2's call does once its line is on disk: the
        // record is taken in, in memory only, and nothing is written.
        let before = std::fs::read(d.records()).expect("records");
        let claimed = a.claim(Some(&at(2)), "http_fetch", FETCH).expect("claimed");
        a.returned(Some(&claimed), &answers[0], None, OWNER, &[])
            .expect("returned");
        let after = std::fs::read(d.records()).expect("records");
        assert!(after == before, "the denial's record is not written");
        drop(a);
        answers
    };
    let lost = notice(2, &answers[0]);
    assert_eq!(
        d.accounting().label(&lost),
        None,
        "the accounting file holds no record of the denial"
    );

    let (accounting, rebuilt, again) = start(&d);
    assert_eq!(
        rebuilt.uses, 2,
        "the calls of completions 2 and 3, kept and named"
    );
    assert_eq!(
        rebuilt.denials,
        [("f2".to_owned(), answers[0].clone(), OWNER)],
        "only the denial of a kept report's call that passed the witness check"
    );
    assert_eq!(again, 1);
    assert_eq!(accounting.label(&lost), Some(OWNER));
    // The next prompt loopd sends, holding the denial's notice, is accounted whole.
    let r = report(2);
    let mut next = vec![
        composed::system(composed::DEFAULT_CORE).digest(),
        owner().digest(),
        r.answer,
        lost,
    ];
    let got = accounting.label_of(&next);
    assert_eq!((got.label, got.unaccounted), (OWNER, 0));
    // The other denials are not rebuilt: one named no witnessed call, one a forgotten one.
    next.push(notice(3, &answers[1]));
    next.push(notice(1, &answers[2]));
    assert_eq!(accounting.label_of(&next).unaccounted, 2);
    drop(accounting);

    // Written again once, synced: the next start finds it in the file.
    let (accounting, _, again) = start(&d);
    assert_eq!(again, 0);
    assert_eq!(accounting.label(&lost), Some(OWNER));
}
