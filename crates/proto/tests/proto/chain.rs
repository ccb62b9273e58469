use proto::chain::{ChainHead, ChainVerifier, line_hash};
use proto::{AuditEvent, AuditLine, Hash32, Timestamp, TornLine};

fn event(seq: u64, prev: Hash32) -> Vec<u8> {
    let line = AuditLine::Event(AuditEvent::GrantsLoaded {
        seq,
        time: Timestamp::from_millis(1_789_632_300_000 + seq).expect("time"),
        prev,
        snapshot: Hash32::from_bytes([7; 32]),
        grants: vec!["g".into()],
        texts: Default::default(),
        since: None,
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

fn torn(line: u64, bytes: &[u8]) -> TornLine {
    TornLine {
        file: "a.jsonl".into(),
        line,
        torn_bytes: u64::try_from(bytes.len()).expect("len"),
        torn_sha256: line_hash(bytes),
    }
}

#[test]
fn a_torn_tail_is_reported_not_refused() {
    let mut lines = chain(3);
    lines.push(b"{\"kind\":\"grants_lo".to_vec());
    let summary = verify(&lines, false).expect("torn tail");
    assert_eq!(summary.torn_tail, [torn(4, &lines[3])]);
    assert_eq!(summary.lines, 3);
    // The same bytes ended by a newline at the very end: a start ended the torn line and
    // died before its recovery line. Reported the same way, so that `bxctl audit verify`
    // and brokerd's start agree.
    assert_eq!(
        verify(&lines, true).expect("ended torn tail").torn_tail,
        [torn(4, &lines[3])]
    );
    // Anywhere else such a line is refused.
    lines.push(event(3, line_hash(&lines[2])));
    assert!(
        verify(&lines, true)
            .expect_err("broken")
            .contains("line 4: not an audit line")
    );
}

/// A recovery line naming `lines` (1-based line, bytes), the first in the record's own
/// fields and the rest as `interrupted`.
fn recovery_of(seq: u64, prev: Hash32, named: &[(u64, &[u8])]) -> Vec<u8> {
    let mut named = named.iter().map(|(line, bytes)| torn(*line, bytes));
    let first = named.next().expect("a torn line");
    serde_json::to_vec(&AuditLine::Event(AuditEvent::Recovery {
        seq,
        time: Timestamp::from_millis(1_789_632_400_000).expect("time"),
        prev,
        file: first.file,
        line: first.line,
        torn_bytes: first.torn_bytes,
        torn_sha256: first.torn_sha256,
        interrupted: named.collect(),
    }))
    .expect("encode")
}

fn recovery(seq: u64, prev: Hash32, torn: &[u8], line: u64) -> Vec<u8> {
    recovery_of(seq, prev, &[(line, torn)])
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

#[test]
fn recovery_lines_torn_in_turn_are_named_by_the_one_that_completes() {
    for interrupted in 1..=3u64 {
        let mut lines = chain(3);
        let head = line_hash(&lines[2]);
        lines.push(b"{\"kind\":\"grants_lo".to_vec());
        // Each interrupted start wrote part of a recovery line naming what it found.
        for k in 0..interrupted {
            let full = recovery(3, head, &lines[3], 4);
            let cut = 12 + usize::try_from(k).expect("k") * 7;
            lines.push(full[..cut].to_vec());
        }
        let summary = verify(&lines, false).expect("torn tail");
        let named: Vec<(u64, &[u8])> = (3..lines.len())
            .map(|i| (u64::try_from(i).expect("i") + 1, lines[i].as_slice()))
            .collect();
        let expected: Vec<TornLine> = named.iter().map(|(l, b)| torn(*l, b)).collect();
        assert_eq!(summary.torn_tail, expected, "{interrupted} interrupted");
        assert_eq!(summary.head.next_seq, 3);

        // The recovery line that completes names them all; the chain goes on after it.
        let mut good = lines.clone();
        let rec = recovery_of(3, head, &named);
        good.push(rec.clone());
        good.push(event(4, line_hash(&rec)));
        let summary = verify(&good, true).expect("recovered");
        assert_eq!(
            (summary.lines, summary.recovered),
            (5, 1 + interrupted),
            "{interrupted} interrupted"
        );

        // One that names only the first torn line, or leaves one out, accounts for nothing.
        for partial in [&named[..1], &named[1..]] {
            let mut bad = lines.clone();
            bad.push(recovery_of(3, head, partial));
            let err = verify(&bad, true).expect_err("not all named");
            assert!(err.starts_with("a.jsonl line 4:"), "{err}");
        }
    }
}

#[test]
fn only_a_recovery_line_cut_short_may_follow_a_torn_line() {
    let mut lines = chain(3);
    lines.push(b"{\"kind\":\"grants_lo".to_vec());
    lines.push(b"{\"seq\":3,\"ti".to_vec());
    let err = verify(&lines, false).expect_err("two torn lines of other kinds");
    assert!(
        err.starts_with("a.jsonl line 4: not an audit line"),
        "{err}"
    );
}

#[test]
fn a_line_that_links_is_never_taken_for_a_torn_one() {
    // A good last line (acknowledged) followed by what looks like a torn recovery line:
    // only the latter is torn, the good line stays a link of the chain.
    let mut lines = chain(4);
    lines.push(b"{\"kind\":\"recov".to_vec());
    let summary = verify(&lines, false).expect("torn tail");
    assert_eq!((summary.lines, summary.head.next_seq), (4, 4));
    assert_eq!(summary.torn_tail, [torn(5, &lines[4])]);
}
