//! `bxctl status`, `bxctl grants reload` and `bxctl sessions` against stand-in peers: every
//! word a peer sends (a reload's reason, the model's `/health` body, a session's preview)
//! is one inert line, and `--json` prints the wire body.

use proto::chat::{SessionListing, SessionSummary};
use proto::status::{
    BrokerStatus, GatewayLink, GrantsStatus, LoopStatus, ModelHealth, OnDisk, Reach, Reloaded,
};
use proto::{Epoch, Hash32, Message, SessionId};

use crate::peer::{ESCAPED, HOSTILE, Home, raw, time};

fn broker() -> BrokerStatus {
    BrokerStatus {
        version: HOSTILE.into(),
        pending_approvals: 2,
        audit_next_seq: 7,
        audit_head: Hash32::ZERO,
        grants: GrantsStatus {
            loaded: Hash32::ZERO,
            grants: vec![HOSTILE.into()],
            on_disk: OnDisk::Refused {
                reason: HOSTILE.into(),
            },
            last_reload: Some(Reloaded::Refused {
                time: time(),
                kept: Hash32::ZERO,
                reason: HOSTILE.into(),
            }),
        },
        gateway: Some(GatewayLink::Down {
            since: time(),
            reason: HOSTILE.into(),
        }),
        allowances: vec![proto::allowance::Allowance {
            allowance: HOSTILE.into(),
            session: SessionId::new("s-1").expect("id"),
            tool: HOSTILE.into(),
            grant: HOSTILE.into(),
            scope: proto::allowance::Scope::Grant,
            session_taint: proto::DataClass::Private,
            untrusted: false,
            approval: HOSTILE.into(),
            by: HOSTILE.into(),
            post: None,
            granted: time(),
            expires: time(),
        }],
    }
}

fn looped() -> LoopStatus {
    LoopStatus {
        version: HOSTILE.into(),
        inferproxy: Reach::Reachable {
            version: Some(HOSTILE.into()),
        },
        model: ModelHealth::Unhealthy {
            reason: HOSTILE.into(),
        },
        model_path: None,
    }
}

#[test]
fn status_shows_every_peer_word_as_one_line_and_fails_when_not_all_is_well() {
    let home = Home::new("status");
    let b = home.answer(&home.brokerd(), vec![Message::BrokerStatus(broker())]);
    let l = home.answer(&home.loopd(), vec![Message::LoopStatus(looped())]);
    let out = home.bxctl(&["status"]);
    assert!(matches!(
        b.join().expect("brokerd"),
        Message::StatusQuery(_)
    ));
    assert!(matches!(l.join().expect("loopd"), Message::StatusQuery(_)));
    // The model is not healthy: a check failed.
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(!raw(&text), "{text:?}");
    let z = Hash32::ZERO;
    let t = time();
    assert_eq!(
        text,
        format!(
            "brokerd     reachable, ready, version {ESCAPED}\n\
             approvals   2 waiting (`bxctl approvals`)\n\
             allowance   every {ESCAPED} call grant {ESCAPED} covers in session s-1, until {t} \
             (expired; `bxctl approvals`)\n\
             audit       next seq 7, head {z}\n\
             grants      snapshot {z} loaded ({ESCAPED})\n\
             grants      on disk: DO NOT LOAD: {ESCAPED}\n\
             grants      last reload {t}: FAILED, snapshot {z} stays: {ESCAPED}\n\
             gatewayd    NOT LINKED since {t}: {ESCAPED}\n\
             loopd       reachable, ready, version {ESCAPED}\n\
             inferproxy  reachable (from loopd), version {ESCAPED}\n\
             model       NOT HEALTHY: {ESCAPED}\n"
        )
    );
}

#[test]
fn status_json_is_both_wire_bodies() {
    let home = Home::new("status-json");
    let b = home.answer(&home.brokerd(), vec![Message::BrokerStatus(broker())]);
    let l = home.answer(&home.loopd(), vec![Message::LoopStatus(looped())]);
    let out = home.bxctl(&["status", "--json"]);
    b.join().expect("brokerd");
    l.join().expect("loopd");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["good"], false);
    assert_eq!(v["brokerd"]["reachable"], true);
    let back: BrokerStatus =
        serde_json::from_value(v["brokerd"]["status"].clone()).expect("a broker_status body");
    assert_eq!(back, broker());
    let back: LoopStatus =
        serde_json::from_value(v["loopd"]["status"].clone()).expect("a loop_status body");
    assert_eq!(back, looped());
    assert_eq!(v["units"], serde_json::json!([]));
}

#[test]
fn a_refused_reload_shows_its_reason_inert_and_exits_1() {
    let home = Home::new("reload");
    let refused = Reloaded::Refused {
        time: time(),
        kept: Hash32::ZERO,
        reason: HOSTILE.into(),
    };
    let b = home.answer(&home.brokerd(), vec![Message::GrantsReloaded(refused)]);
    let out = home.bxctl(&["grants", "reload"]);
    assert!(matches!(
        b.join().expect("brokerd"),
        Message::GrantsReload(_)
    ));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(!raw(&text), "{text:?}");
    assert!(
        text.starts_with(&format!(
            "grants reload REFUSED, snapshot {} stays in force: {ESCAPED}\nhelp: ",
            Hash32::ZERO
        )),
        "{text}"
    );
}

#[test]
fn the_session_listing_shows_the_preview_inert_and_json_as_sent() {
    let home = Home::new("listing");
    let listing = SessionListing {
        sessions: vec![SessionSummary {
            session: SessionId::new("s-1").expect("id"),
            epoch: Epoch(2),
            started: time(),
            last: time(),
            turns: 1,
            all_turns: Some(9),
            preview: Some(HOSTILE.into()),
        }],
    };
    let l = home.answer(
        &home.loopd(),
        vec![Message::SessionListing(listing.clone())],
    );
    let out = home.bxctl(&["sessions"]);
    l.join().expect("loopd");
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert_eq!(
        text,
        format!("s-1  last {}  9 turns  epoch 2  {ESCAPED}\n", time())
    );
    let _ = std::fs::remove_file(home.loopd());
    let l = home.answer(
        &home.loopd(),
        vec![Message::SessionListing(listing.clone())],
    );
    let out = home.bxctl(&["sessions", "--json"]);
    l.join().expect("loopd");
    let back: SessionListing = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(back, listing);
}
