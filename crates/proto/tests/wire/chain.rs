use proto::chain::{ChainHead, ChainVerifier, line_hash};
use proto::{AuditEvent, AuditLine, Hash32, Timestamp};

fn event(seq: u64, prev: Hash32) -> Vec<u8> {
    let line = AuditLine::Event(AuditEvent::GrantsLoaded {
        seq,
        time: Timestamp::from_millis(1_789_632_300_000 + seq).expect("time"),
        prev,
        snapshot: Hash32::from_bytes([7; 32]),
        grants: vec!["g".into()],
    });
    serde_json::to_vec(&line).expect("encode")
}

/// A chain of `n` good lines.
fn chain(n: u64) -> Vec<Vec<u8>> {
    let mut prev = Hash32::ZERO;
    (0..n)
        .map(|seq| {
            let line = event(seq, prev);
            prev = line_hash(&line);
            line
        })
        .collect()
}

fn verify(lines: &[Vec<u8>], newline_at_end: bool) -> Result<proto::chain::ChainSummary, String> {
    let mut v = ChainVerifier::default();
    for (i, line) in lines.iter().enumerate() {
        v.push("a.jsonl", u64::try_from(i).expect("i") + 1, line)
            .map_err(|e| e.to_string())?;
    }
    v.finish(newline_at_end).map_err(|e| e.to_string())
}

#[test]
fn a_good_chain_verifies_from_genesis() {
    let lines = chain(5);
    let summary = verify(&lines, true).expect("good");
    assert_eq!(summary.lines, 5);
    assert_eq!(summary.head.next_seq, 5);
    assert_eq!(summary.head.prev, line_hash(&lines[4]));
    assert_eq!(verify(&[], true).map(|s| s.head), Ok(ChainHead::GENESIS));
}

#[test]
fn one_changed_byte_is_named_by_file_and_line() {
    let mut lines = chain(5);
    let at = lines[2]
        .windows(5)
        .position(|w| w == b"[\"g\"]")
        .expect("grant")
        + 2;
    lines[2][at] = b'h';
    let err = verify(&lines, true).expect_err("tampered");
    assert!(err.starts_with("a.jsonl line 4: prev"), "{err}");
}

#[test]
fn a_removed_or_reordered_line_breaks_the_chain() {
    let mut lines = chain(5);
    lines.remove(1);
    assert!(
        verify(&lines, true)
            .expect_err("gap")
            .contains("line 2: seq is 2")
    );
    let mut lines = chain(5);
    lines.swap(1, 2);
    assert!(verify(&lines, true).is_err());
}

#[test]
fn a_torn_tail_is_reported_not_refused() {
    let mut lines = chain(3);
    lines.push(b"{\"kind\":\"grants_lo".to_vec());
    let summary = verify(&lines, false).expect("torn tail");
    assert_eq!(summary.torn_tail, Some(("a.jsonl".into(), 4)));
    assert_eq!(summary.lines, 3);
    // The same bytes followed by a newline are a broken line, not a torn one.
    assert!(verify(&lines, true).is_err());
}

fn recovery(seq: u64, prev: Hash32, torn: &[u8], line: u64) -> Vec<u8> {
    serde_json::to_vec(&AuditLine::Event(AuditEvent::Recovery {
        seq,
        time: Timestamp::from_millis(1_789_632_400_000).expect("time"),
        prev,
        file: "a.jsonl".into(),
        line,
        torn_bytes: u64::try_from(torn.len()).expect("len"),
        torn_sha256: line_hash(torn),
    }))
    .expect("encode")
}

#[test]
fn a_recovery_line_accounts_for_a_torn_line_and_the_chain_goes_on() {
    let mut lines = chain(3);
    let head = line_hash(&lines[2]);
    let torn = b"{\"kind\":\"grants_lo".to_vec();
    lines.push(torn.clone());
    let rec = recovery(3, head, &torn, 4);
    lines.push(rec.clone());
    lines.push(event(4, line_hash(&rec)));
    let summary = verify(&lines, true).expect("recovered");
    assert_eq!((summary.lines, summary.recovered), (5, 1));

    // A recovery that names other bytes does not excuse the torn line.
    let mut lines = chain(3);
    lines.push(torn.clone());
    lines.push(recovery(3, head, b"something else", 4));
    assert!(
        verify(&lines, true)
            .expect_err("wrong")
            .contains("line 4: not an audit line")
    );
}
