//! The approvals waiting for the owner: single use, capped, and ended all at once when
//! brokerd stops.

use brokerd::ask::approvals::{Answer, Approvals, Approved, NotRegistered, Wake};
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

/// The desk's approval of a card, as the owner `by` gives it: the one way to an allow from
/// an ask, made here as brokerd makes it (an approve answered for the card as shown).
pub(crate) fn approved_by(by: &str) -> Approved {
    let mut approvals = Approvals::new(1);
    let (tx, rx) = std::sync::mpsc::channel();
    let c = card("a");
    approvals.register(c.clone(), tx).expect("register");
    let answer = Answer {
        verdict: Verdict::Approve,
        by: by.into(),
        post: None,
    };
    approvals
        .answer("a", c.binding, |c| c.bound(), answer, Timestamp::now())
        .expect("accepted");
    match rx.try_recv() {
        Ok(Wake::Approved(a)) => a,
        other => panic!("{other:?}"),
    }
}

/// An answer to a card that no longer holds (the labels rose after it was shown: its
/// binding recomputed now differs) is refused `changed`, and the waiting call is denied by
/// brokerd, never woken with the owner's answer: neither an approve that would run nor a
/// refusal in the owner's name (issue 23 point 1).
#[test]
fn an_answer_to_a_card_that_no_longer_holds_is_brokerds_denial_not_the_owners() {
    for verdict in [Verdict::Approve, Verdict::Deny] {
        let mut approvals = Approvals::new(2);
        let (tx, rx) = std::sync::mpsc::channel();
        let shown = card("a");
        approvals.register(shown.clone(), tx).expect("register");
        let answer = Answer {
            verdict,
            by: "uid 0 (root)".into(),
            post: None,
        };
        let rose = |c: &ApprovalCard| {
            let mut now = c.clone();
            now.session_taint = proto::DataClass::Secret;
            now.bound()
        };
        let got = approvals.answer("a", shown.binding, rose, answer, Timestamp::now());
        assert_eq!(got.map_err(|r| r.refusal), Err(Refusal::Changed));
        assert_eq!(rx.try_recv(), Ok(Wake::Changed), "{verdict:?}");
        // It is over: a second answer is refused as used.
        let again = Answer {
            verdict: Verdict::Approve,
            by: "uid 0 (root)".into(),
            post: None,
        };
        let late = approvals.answer("a", shown.binding, |c| c.bound(), again, Timestamp::now());
        assert_eq!(late.map_err(|r| r.refusal), Err(Refusal::AlreadyUsed));
    }
}

/// The owner's answer for the card as shown wakes the call with that answer: an approve
/// becomes the desk's approval, a refusal the owner's.
#[test]
fn the_owners_answer_to_the_card_as_shown_is_the_owners() {
    assert_eq!(approved_by("uid 1000 (owner)").by(), "uid 1000 (owner)");
    let mut approvals = Approvals::new(1);
    let (tx, rx) = std::sync::mpsc::channel();
    let c = card("b");
    approvals.register(c.clone(), tx).expect("register");
    let no = Answer {
        verdict: Verdict::Deny,
        by: "uid 1000 (owner)".into(),
        post: Some("p1".into()),
    };
    approvals
        .answer("b", c.binding, |c| c.bound(), no, Timestamp::now())
        .expect("accepted");
    assert_eq!(
        rx.try_recv(),
        Ok(Wake::Refused {
            by: "uid 1000 (owner)".into(),
            post: Some("p1".into())
        })
    );
}

/// The session answer is taken only for a card that offers it (a card of an `always_ask`
/// grant offers none): otherwise it is refused `not_offered`, and the approval waits on for
/// an approve or a deny. For a card that offers it, it wakes the call to record the
/// allowance, with the owner's approval.
#[test]
fn the_session_answer_is_taken_only_for_a_card_that_offers_it() {
    let session = |by: &str| Answer {
        verdict: Verdict::AllowSession,
        by: by.into(),
        post: Some("p1".into()),
    };
    let mut approvals = Approvals::new(2);
    let (tx, rx) = std::sync::mpsc::channel();
    let plain = card("a");
    assert_eq!(plain.session_offer, None);
    approvals
        .register(plain.clone(), tx.clone())
        .expect("register");
    let got = approvals.answer(
        "a",
        plain.binding,
        |c| c.bound(),
        session("o"),
        Timestamp::now(),
    );
    assert_eq!(got.map_err(|r| r.refusal), Err(Refusal::NotOffered));
    assert!(rx.try_recv().is_err(), "nothing woke the call");
    assert!(approvals.is_pending("a"));
    let yes = Answer {
        verdict: Verdict::Approve,
        by: "o".into(),
        post: None,
    };
    approvals
        .answer("a", plain.binding, |c| c.bound(), yes, Timestamp::now())
        .expect("an approve still answers it");
    assert!(matches!(rx.try_recv(), Ok(Wake::Approved(_))));

    let mut offering = card("b");
    offering.session_offer = Some(proto::allowance::SessionOffer {
        scope: proto::allowance::Scope::Grant,
        lasts_secs: 3600,
    });
    // The offer is bound: the card without it is another card.
    assert_ne!(offering.bound(), offering.binding);
    offering.binding = offering.bound();
    approvals.register(offering.clone(), tx).expect("register");
    approvals
        .answer(
            "b",
            offering.binding,
            |c| c.bound(),
            session("o"),
            Timestamp::now(),
        )
        .expect("accepted");
    match rx.try_recv() {
        Ok(Wake::ForSession(a)) => {
            assert_eq!((a.by(), a.post(), a.allowance()), ("o", Some("p1"), None));
        }
        other => panic!("{other:?}"),
    }
}
