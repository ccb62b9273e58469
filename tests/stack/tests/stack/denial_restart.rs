//! A denied witnessed call's tool message stays accounted across a restart (docs/decisions.md
//! X8): its accounting record is kept in memory only, its decision's audit line is its
//! durable record, and brokerd's start accounts it again from that line. Here brokerd is
//! SIGKILLed right after the denial's answer: loopd's next prompt, which holds the denial's
//! notice, is still accounted, with no fall-back.

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
            "1 denials of kept witnessed calls in the audit log, 1 of their records written again"
        ),
        "{log}"
    );
    home.assert_audit_good();
}
