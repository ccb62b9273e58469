//! Approval cards and session allowances as `bxctl approvals` shows them: every field
//! from brokerd one inert line (`inert`'s rule), the compact card with its session offer and
//! the commands that answer it, each allowance with the command that revokes it.

use proto::allowance::{Allowance, Scope, SessionOffer};
use proto::approval::{ApprovalCard, ApprovalListing, CallRef};
use proto::{CallId, DataClass, Hash32, Message};

use crate::inert::{ARGS, hint, s1};
use crate::peer::{ESCAPED, HOSTILE, Home, stdout, time};

#[test]
fn approvals_show_every_field_of_a_card_and_an_allowance_as_one_line() {
    let home = Home::new("approvals");
    let card = ApprovalCard {
        approval: HOSTILE.into(),
        binding: Hash32::ZERO,
        session: s1(),
        call: CallId(4),
        tool: HOSTILE.into(),
        arguments: HOSTILE.into(),
        grant: HOSTILE.into(),
        session_taint: DataClass::Private,
        untrusted: true,
        untrusted_by: vec![CallRef {
            tool: HOSTILE.into(),
            call: CallId(3),
            read: Some(HOSTILE.into()),
            session: None,
        }],
        expires: time(),
        session_offer: Some(SessionOffer {
            scope: Scope::Path {
                path: HOSTILE.into(),
            },
            lasts_secs: 3600,
        }),
        write: None,
    };
    let allowance = Allowance {
        allowance: HOSTILE.into(),
        session: s1(),
        tool: HOSTILE.into(),
        grant: HOSTILE.into(),
        scope: Scope::Host {
            host: HOSTILE.into(),
        },
        session_taint: DataClass::Secret,
        untrusted: false,
        approval: HOSTILE.into(),
        by: HOSTILE.into(),
        post: None,
        granted: time(),
        expires: time(),
    };
    let served = home.answer(
        &home.brokerd(),
        vec![Message::ApprovalListing(ApprovalListing {
            pending: vec![card],
            omitted: 0,
            allowances: vec![allowance],
        })],
    );
    let out = stdout(&home.bxctl(&["approvals"]));
    served.join().expect("brokerd");
    assert_eq!(
        out,
        format!(
            "approval {ESCAPED}\n\
             \x20 {ESCAPED} {ARGS} (call 4 of session s-1)\n\
             \x20 grant {ESCAPED}, taint private, expires 2026-09-17T08:05:00.000Z (expired)\n\
             \x20 UNTRUSTED: the session has read content that may steer the model, from \
             {ESCAPED} (call 3, read {ESCAPED})\n\
             \x20 this session: {ESCAPED} at or under {ESCAPED}, for 1 h, while the label stays \
             private, untrusted or below\n\
             \x20 answer: `{bx}approve {ESCAPED}`, `{bx}approve --for-session {ESCAPED}` or \
             `{bx}deny {ESCAPED}`\n\n\
             allowance {ESCAPED}\n\
             \x20 {ESCAPED} to {ESCAPED} (session s-1, approval {ESCAPED})\n\
             \x20 by {ESCAPED}, until 2026-09-17T08:05:00.000Z (expired), while the label stays \
             secret or below\n\
             \x20 revoke: `{bx}approvals revoke {ESCAPED}`\n\n",
            bx = hint(&home)
        )
    );
}
