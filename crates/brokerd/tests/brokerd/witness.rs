//! The witness store and the decision a tool request's witness gets: on disk before it is
//! acknowledged, bounded, read back after a restart (a torn last line cut off, any other bad
//! line refusing the start), and each witnessed call used at most once.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use brokerd::witness::{Store, StoreError, Witness};
use proto::attest::{CompletionId, WitnessRef, WitnessReport};
use proto::{DenyReason, Hash32, ToolCall};

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
    let claim = |r: &WitnessRef, tool: &str, a: &str| reason(w.claim(r, tool, a).expect("disk"));
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
    let w = std::sync::Arc::new(Witness::new(store, Duration::from_secs(5)));
    let late = w.clone();
    let reporter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        late.record(report(3, "tool_calls"))
            .expect("disk")
            .expect("recorded");
    });
    let start = Instant::now();
    let got = w
        .claim(&at(3, 0), "read_file", "{\"path\": \"/n\"}")
        .expect("disk");
    assert_eq!(got, Ok(()));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    reporter.join().expect("reporter");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn records_and_uses_survive_a_restart_and_the_oldest_past_the_bound_are_forgotten() {
    let d = dir("restart");
    let args = "{\"path\": \"/n\"}";
    {
        let (store, opened) = Store::open(&d, 3).expect("open");
        assert_eq!((opened.kept, opened.torn), (0, false));
        let w = Witness::new(store, Duration::from_millis(50));
        for n in 1..=4 {
            w.record(report(n, "tool_calls"))
                .expect("disk")
                .expect("recorded");
        }
        assert_eq!(
            reason(w.claim(&at(4, 0), "read_file", args).expect("disk")),
            None
        );
        // Past the bound of 3: the first is forgotten, its call not witnessed any more.
        assert_eq!(
            reason(w.claim(&at(1, 0), "read_file", args).expect("disk")),
            Some(DenyReason::NotWitnessed)
        );
        // Enough lines to rewrite the file (twice the bound).
        for n in 5..=8 {
            w.record(report(n, "tool_calls"))
                .expect("disk")
                .expect("recorded");
        }
        assert_eq!(
            reason(w.claim(&at(8, 0), "read_file", args).expect("disk")),
            None
        );
    }
    let lines = std::fs::read_to_string(d.join("witness.jsonl"))
        .expect("file")
        .lines()
        .count();
    assert!(lines <= 6, "rewritten to what is kept: {lines} lines");
    let (store, opened) = Store::open(&d, 3).expect("reopen");
    assert_eq!(opened.kept, 3);
    let w = Witness::new(store, Duration::from_millis(50));
    let claim = |n, a: &str| reason(w.claim(&at(n, 0), "read_file", a).expect("disk"));
    assert_eq!(
        claim(8, args),
        Some(DenyReason::AlreadyRun),
        "the use survived"
    );
    assert_eq!(
        claim(7, args),
        None,
        "a call recorded before the restart runs once"
    );
    assert_eq!(claim(7, args), Some(DenyReason::AlreadyRun));
    assert_eq!(
        claim(4, args),
        Some(DenyReason::NotWitnessed),
        "forgotten past the bound"
    );
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
