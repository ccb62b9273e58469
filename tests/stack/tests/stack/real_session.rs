//! Real-peer tier (issue 12 point 6): a 20-turn session with a compaction through the real
//! binaries against llama.cpp's own server, resumed from a log that holds tool exchanges
//! (`stack::real_session`). Every request after the first wastes at most 8 tokens of
//! prefill, beyond what a replayed answer costs whose sampled tokens are not its text's own
//! tokens (the residue of docs/decisions.md L19, printed in the table). Ignored under a
//! plain `cargo test`; `tests/gate` step `realsession` runs it.

use stack::real_session::{self, Plan};

/// The bound on wasted prefill per request.
const WASTE_BOUND: i64 = 8;

#[test]
#[ignore = "real peer: run by tests/gate realsession"]
fn a_real_model_session_wastes_at_most_8_tokens_per_request_beyond_the_residue() {
    let mut session = real_session::run(&Plan::default());
    session.measure();
    let run = &session.run;
    let table = run.table();
    let _ = std::io::Write::write_all(&mut std::io::stderr(), table.as_bytes());
    assert!(run.compactions >= 1, "no compaction in 20 turns:\n{table}");
    // The real server's tool calls, parsed by inferproxy's copy of the stream, are the
    // calls loopd sent: every one witnessed, none denied for its witness.
    let witness_denials: Vec<String> = session
        .home
        .audit_lines()
        .iter()
        .filter_map(|l| match l {
            proto::AuditLine::Decision(r) => match &r.decision {
                proto::DecisionRecord::Denied { reason, .. }
                    if matches!(
                        reason,
                        proto::DenyReason::NotWitnessed
                            | proto::DenyReason::WitnessMismatch
                            | proto::DenyReason::WitnessNotRunnable
                            | proto::DenyReason::AlreadyRun
                    ) =>
                {
                    Some(format!("{} {}: {}", r.tool, r.arguments, reason.as_str()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(witness_denials.is_empty(), "{witness_denials:?}\n{table}");
    for (i, r) in run.requests.iter().enumerate() {
        assert_eq!(
            r.status,
            200,
            "request {} (turn {}):\n{table}",
            i + 1,
            r.turn
        );
        let residue = i64::try_from(r.residue).expect("residue");
        assert!(
            i == 0 || r.wasted <= WASTE_BOUND + residue,
            "request {} (turn {}) wasted {} tokens (residue {residue}):\n{table}",
            i + 1,
            r.turn,
            r.wasted,
        );
    }
}
