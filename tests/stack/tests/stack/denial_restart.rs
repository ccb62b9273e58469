//! A denied witnessed call's tool message stays accounted across a restart (docs/decisions.md
//! X8): its accounting record is kept in memory only, its decision's audit line is its
//! durable record, and brokerd's start accounts it again from that line. Here brokerd is
//! SIGKILLed right after the denial's answer: loopd's next prompt, which holds the denial's
//! notice, is still accounted, with no fall-back. And when a full verification moved the
//! checkpoint past the denial's line before the kill (docs/decisions.md A8), the record was
//! written then, so the start that reads only past the checkpoint still has it.

use daemon::conn::Conn;
use proto::attest::WitnessRef;
use proto::composed;
use proto::{DenyReason, ToolResponse};
use serde_json::json;
use stack::{complete, request_as, response};

use crate::laundering::{owner, stack, system};

#[test]
fn a_denial_is_accounted_after_brokerd_is_killed_right_after_it() {
    // An `ask` egress grant, 1 s to answer; the model calls http_fetch when asked to send.
    let (home, mut agent) = stack("denial-restart");
    let mut prompt = vec![system(), owner(&home, "send it")];
    let (completion, answer) = complete(&home, &prompt, json!({}));
    let call = answer.tool_calls[0].clone();
    let records = home.root.join("home/accounting/records.jsonl");
    let before = std::fs::metadata(&records).expect("records").len();
    // Put to the owner, who lets it expire: denied.
    let mut conn = Conn::connect(&home.loop_sock()).expect("broker.sock");
    let w = WitnessRef {
        completion,
        index: 0,
    };
    let frames = request_as(&mut conn, "s-1", 1, &call.name, &call.arguments, w);
    let denied = response(&frames).clone();
    assert!(
        matches!(
            denied,
            ToolResponse::Denied {
                reason: DenyReason::ApprovalExpired,
                ..
            }
        ),
        "{denied:?}"
    );
    agent.daemons[1].kill();
    // The denial's answer wrote nothing to the accounting: its record was in memory only,
    // and the kill took it.
    let after = std::fs::metadata(&records).expect("records").len();
    assert_eq!(after, before, "the denial's record is not written");

    agent.daemons[1] = home.start();
    // loopd's next prompt holds the answer and the denial's notice.
    prompt.push(answer.message());
    prompt.push(composed::tool_message(&call.id, &denied));
    prompt.push(owner(&home, "and now?"));
    let _ = complete(&home, &prompt, json!({}));
    assert_eq!(agent.fallbacks(), Vec::<String>::new());
    let log = agent.daemons[1].log();
    assert!(
        log.contains(
            "1 denials of kept witnessed calls in the audit log past its checkpoint, 1 of their \
             records written again"
        ),
        "{log}"
    );
    home.assert_audit_good();
}

#[test]
fn a_denial_is_accounted_after_a_full_verification_checkpointed_past_it_and_a_kill() {
    let (home, mut agent) = stack("denial-verified");
    let mut prompt = vec![system(), owner(&home, "send it")];
    let (completion, answer) = complete(&home, &prompt, json!({}));
    let call = answer.tool_calls[0].clone();
    let records = home.root.join("home/accounting/records.jsonl");
    let mut conn = Conn::connect(&home.loop_sock()).expect("broker.sock");
    let w = WitnessRef {
        completion,
        index: 0,
    };
    let frames = request_as(&mut conn, "s-1", 1, &call.name, &call.arguments, w);
    let denied = response(&frames).clone();
    assert!(matches!(denied, ToolResponse::Denied { .. }), "{denied:?}");
    let before = std::fs::metadata(&records).expect("records").len();
    // The daily timer's verification: the checkpoint moves past the denial's line, so its
    // record, kept in memory until now, is written first.
    let out = home.bxctl(&["audit", "verify", "--brokerd"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let after = std::fs::metadata(&records).expect("records").len();
    assert!(
        after > before,
        "the denial's record is written before the checkpoint"
    );
    agent.daemons[1].kill();

    agent.daemons[1] = home.start();
    let log = agent.daemons[1].log();
    assert!(
        log.contains("0 denials of kept witnessed calls in the audit log past its checkpoint"),
        "the start reads no line of the denial: {log}"
    );
    prompt.push(answer.message());
    prompt.push(composed::tool_message(&call.id, &denied));
    prompt.push(owner(&home, "and now?"));
    let _ = complete(&home, &prompt, json!({}));
    assert_eq!(agent.fallbacks(), Vec::<String>::new());
    home.assert_audit_good();
}
