//! A start cut short while it recovers a torn audit line (power lost during start) is
//! recovered at the next start, however many starts in a row were cut short: brokerd serves
//! again, `bxctl audit verify` agrees with brokerd's recovery before and after, and nothing
//! acknowledged is lost.

use std::path::PathBuf;

use proto::{AuditEvent, AuditLine, ToolResponse};
use stack::{Home, read_grant, response, tool};

/// The newest audit day file.
fn newest(home: &Home) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.audit_dir())
        .expect("audit dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files.pop().expect("a day file")
}

/// brokerd's audit checkpoint, if there is one (docs/decisions.md A8).
fn checkpoint(home: &Home) -> Option<Vec<u8>> {
    std::fs::read(home.audit_dir().join(proto::checkpoint::FILE)).ok()
}

/// What power lost inside the start's recovery line leaves: the file ends part way into
/// that line, without its newline, and nothing the start wrote after it is there: not the
/// lines after it, and not the checkpoint it writes once that line is on disk (`before`,
/// the checkpoint as it was before that start, is put back).
fn cut_inside_last_recovery(home: &Home, before: Option<Vec<u8>>) {
    let path = newest(home);
    let bytes = std::fs::read(&path).expect("read");
    let at = bytes
        .windows(20)
        .rposition(|w| w == b"\n{\"kind\":\"recovery\",")
        .expect("a recovery line")
        + 1;
    let line_len = bytes[at..].iter().position(|b| *b == b'\n').expect("whole");
    std::fs::write(&path, &bytes[..at + line_len / 2]).expect("cut");
    let file = home.audit_dir().join(proto::checkpoint::FILE);
    match before {
        Some(bytes) => std::fs::write(&file, bytes).expect("the checkpoint before"),
        None => std::fs::remove_file(&file).expect("no checkpoint before"),
    }
}

fn read_ok(home: &Home, call: u64, path: &str) {
    assert!(
        matches!(
            response(&tool(&home.loop_sock(), "s-1", call, "read_file", path)),
            ToolResponse::Result { .. }
        ),
        "call {call}"
    );
}

#[test]
fn starts_cut_short_while_recovering_a_torn_line_are_recovered_at_the_next() {
    let home = Home::new("torn-recovery", "");
    let notes = home.files("notes", &[("n.md", "note")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let path = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let mut d = home.start();
    for call in 1..=3 {
        read_ok(&home, call, &path);
    }
    d.kill();
    // brokerd died inside a line.
    let mut torn = std::fs::read(newest(&home)).expect("read");
    torn.extend_from_slice(br#"{"seq":5,"time":"2026-"#);
    std::fs::write(newest(&home), torn).expect("tear");

    for start in 1..=3 {
        let before = checkpoint(&home);
        home.start().kill();
        cut_inside_last_recovery(&home, before);
        // bxctl sees what the next start recovers, as brokerd does.
        let text = home.assert_audit_good();
        assert!(
            text.contains(&format!("and so are the {start} recovery lines after it")),
            "{text}"
        );
    }
    let _d = home.start();
    let text = home.assert_audit_good();
    assert!(text.contains("4 torn lines recovered"), "{text}");
    read_ok(&home, 4, &path);

    let lines = home.audit_lines();
    let calls: Vec<u64> = lines
        .iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => Some(r.call.0),
            AuditLine::Event(_) => None,
        })
        .collect();
    assert_eq!(calls, [1, 2, 3, 4], "every answered call is in the chain");
    let named: Vec<usize> = lines
        .iter()
        .filter_map(|l| match l {
            AuditLine::Event(AuditEvent::Recovery { interrupted, .. }) => Some(interrupted.len()),
            _ => None,
        })
        .collect();
    assert_eq!(
        named,
        [3],
        "one recovery line names the torn line and the 3 cut short"
    );
}
