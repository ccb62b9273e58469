//! `bxctl approve`/`deny` with id prefixes against a stand-in brokerd: a unique prefix of 6
//! or more characters answers with the whole id echoed first, an ambiguous or unmatched one
//! is refused (exit 1) without an answer being sent, and `approvals --json` is the listing.

use proto::approval::{AnswerOutcome, ApprovalCard, ApprovalListing, Refusal, Verdict};
use proto::{CallId, DataClass, Hash32, Message, SessionId};

use crate::peer::{Home, time};

fn card(id: &str, binding: u8) -> ApprovalCard {
    ApprovalCard {
        approval: id.to_owned(),
        binding: Hash32::from_bytes([binding; 32]),
        session: SessionId::new("s-1").expect("id"),
        call: CallId(3),
        tool: "list_dir".into(),
        arguments: r#"{"path":"/n"}"#.into(),
        grant: "notes-list".into(),
        session_taint: DataClass::Private,
        untrusted: false,
        untrusted_by: Vec::new(),
        expires: time(),
        session_offer: None,
        write: None,
    }
}

fn listing() -> Message {
    Message::ApprovalListing(ApprovalListing {
        pending: vec![
            card("3f2a9c01aaaaaaaaaaaaaaaaaaaaaaaa", 1),
            card("3f2a9cffbbbbbbbbbbbbbbbbbbbbbbbb", 2),
            card("77aa00cccccccccccccccccccccccccc", 3),
        ],
        omitted: 0,
        allowances: Vec::new(),
    })
}

#[test]
fn a_unique_prefix_answers_the_whole_id_with_its_binding() {
    let home = Home::new("prefix-one");
    let served = home.answer_each(
        &home.brokerd(),
        vec![
            listing(),
            Message::ApprovalAnswered(AnswerOutcome::Accepted),
        ],
    );
    let out = home.bxctl(&["deny", "77aa00"]);
    let requests = served.join().expect("brokerd");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(
        text.ends_with("deny 77aa00cccccccccccccccccccccccccc\ndenied\n"),
        "{text}"
    );
    match &requests[1] {
        Message::ApprovalAnswer(a) => {
            assert_eq!(a.approval, "77aa00cccccccccccccccccccccccccc");
            assert_eq!(a.binding, Hash32::from_bytes([3; 32]));
            assert_eq!(a.verdict, Verdict::Deny);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_ambiguous_or_unmatched_prefix_is_refused_and_nothing_is_sent() {
    let home = Home::new("prefix-refused");
    for (given, said) in [
        (
            "3f2a9c",
            "refused: 2 waiting approvals start with 3f2a9c: 3f2a9c01aaaaaaaaaaaaaaaaaaaaaaaa, \
             3f2a9cffbbbbbbbbbbbbbbbbbbbbbbbb; give more of the id\n",
        ),
        (
            "000000",
            "refused: no waiting approval starts with 000000 (answered, expired, or never \
             issued)\n",
        ),
    ] {
        let _ = std::fs::remove_file(home.brokerd());
        // One connection only: an answer sent after the listing would find nobody (exit 2).
        let served = home.answer_each(&home.brokerd(), vec![listing()]);
        let out = home.bxctl(&["approve", given]);
        served.join().expect("brokerd");
        assert_eq!(out.status.code(), Some(1), "{given}");
        assert_eq!(String::from_utf8(out.stdout).expect("utf8"), said);
    }
}

#[test]
fn a_refused_answer_exits_1_with_the_wire_name() {
    let home = Home::new("refused-word");
    let served = home.answer_each(
        &home.brokerd(),
        vec![
            listing(),
            Message::ApprovalAnswered(AnswerOutcome::Refused {
                refusal: Refusal::AlreadyUsed,
            }),
        ],
    );
    let out = home.bxctl(&["approve", "3f2a9c01"]);
    served.join().expect("brokerd");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(
        text.ends_with("approve 3f2a9c01aaaaaaaaaaaaaaaaaaaaaaaa\nrefused: already_used\n"),
        "{text}"
    );
}

#[test]
fn approvals_json_is_the_listing() {
    let home = Home::new("approvals-json");
    let served = home.answer_each(&home.brokerd(), vec![listing()]);
    let out = home.bxctl(&["approvals", "--json"]);
    served.join().expect("brokerd");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert_eq!(text.lines().count(), 1);
    let back: ApprovalListing = serde_json::from_str(&text).expect("an approval_listing body");
    assert_eq!(Message::ApprovalListing(back), listing());
}
