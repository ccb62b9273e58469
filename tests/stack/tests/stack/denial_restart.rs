//! A denied witnessed call's tool message stays accounted across a crash (docs/decisions.md
//! X8): its accounting record is written unsynced, its decision's audit line is its durable
//! record, and brokerd's start accounts it again from that line. Here brokerd is SIGKILLed
//! right after the denial's answer, and the record the machine's crash could lose (the
//! unsynced tail of the accounting's file) is cut off before the restart: loopd's next
//! prompt, which holds the denial's notice, is still accounted, with no fall-back.

use daemon::conn::Conn;
use proto::attest::WitnessRef;
use proto::composed;
use proto::{DenyReason, ToolResponse};
use serde_json::json;
use stack::{complete, request_as, response};

use crate::laundering::{owner, stack, system};

#[test]
fn a_denial_is_accounted_after_brokerd_is_killed_right_after_it_and_its_record_lost() {
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
    // What the denial's answer added to the accounting: its tool message's record, which
    // was never synced. A crash of the machine may lose it; here it is lost.
    let text = std::fs::read_to_string(&records).expect("records");
    let tail = &text[usize::try_from(before).expect("length")..];
    let tail: Vec<serde_json::Value> = tail
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect();
    assert_eq!(tail.len(), 1, "{tail:?}");
    assert_eq!(tail[0]["kind"], "tool", "{tail:?}");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&records)
        .and_then(|f| f.set_len(before))
        .expect("cut");

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
