//! The approvals waiting for the owner: single use, capped, and ended all at once when
//! brokerd stops.

use brokerd::approvals::{Answer, Approvals, NotRegistered, Wake};
use proto::approval::{ApprovalCard, Refusal, Verdict};
use proto::{Hash32, Timestamp};

fn card(approval: &str) -> ApprovalCard {
    let expires = Timestamp::now().saturating_add(std::time::Duration::from_secs(60));
    let mut card: ApprovalCard = serde_json::from_value(serde_json::json!({
        "approval": approval, "binding": Hash32::ZERO, "session": "s-1", "call": 2,
        "tool": "read_file", "arguments": "{}", "grant": "g", "session_taint": "private",
        "untrusted": false, "untrusted_by": [], "expires": expires,
    }))
    .expect("card");
    card.binding = card.bound();
    card
}

#[test]
fn stopping_wakes_every_waiter_and_registers_nothing_more() {
    let mut approvals = Approvals::new(4);
    let (tx, rx) = std::sync::mpsc::channel();
    approvals.register(card("a"), tx.clone()).expect("register");
    approvals.register(card("b"), tx.clone()).expect("register");
    assert_eq!(approvals.stop(), 2);
    assert_eq!(rx.try_recv(), Ok(Wake::Stopping));
    assert_eq!(rx.try_recv(), Ok(Wake::Stopping));
    assert!(approvals.list().is_empty());
    assert_eq!(approvals.refuses(), Some(NotRegistered::Stopping));
    assert_eq!(
        approvals.register(card("c"), tx),
        Err(NotRegistered::Stopping)
    );
    let by = Answer {
        verdict: Verdict::Approve,
        by: "o".into(),
        post: None,
    };
    let c = card("a");
    let late = approvals.answer("a", c.binding, |c| c.bound(), by, Timestamp::now());
    assert_eq!(late.map_err(|r| r.refusal), Err(Refusal::Unknown));
}
