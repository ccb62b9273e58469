//! Approval cards: what the binding covers.

use proto::approval::{ApprovalCard, CallRef};
use proto::{CallId, DataClass, Hash32, SessionId, Timestamp};

fn card() -> ApprovalCard {
    ApprovalCard {
        approval: "a".into(),
        binding: Hash32::ZERO,
        session: SessionId::new("s-1").expect("id"),
        call: CallId(4),
        tool: "read_file".into(),
        arguments: r#"{"path":"/x"}"#.into(),
        grant: "g".into(),
        session_taint: DataClass::Private,
        untrusted: true,
        untrusted_by: vec![CallRef {
            tool: "http_fetch".into(),
            call: CallId(2),
            read: Some("https://e.org/".into()),
            session: None,
        }],
        expires: Timestamp::from_millis(1_789_632_300_000).expect("time"),
        session_offer: None,
        write: None,
    }
}

/// Every field the card shows changes the binding, each on its own; the id does not.
#[test]
fn the_binding_covers_every_field_shown() {
    let base = card().bound();
    type Change = fn(&mut ApprovalCard);
    let changes: [(&str, Change); 12] = [
        ("session", |c| {
            c.session = SessionId::new("s-2").expect("id")
        }),
        ("call", |c| c.call = CallId(5)),
        ("tool", |c| c.tool = "list_dir".into()),
        ("arguments", |c| c.arguments = r#"{"path":"/y"}"#.into()),
        ("grant", |c| c.grant = "h".into()),
        ("taint", |c| c.session_taint = DataClass::Secret),
        ("untrusted", |c| c.untrusted = false),
        ("expires", |c| {
            c.expires = c
                .expires
                .saturating_add(std::time::Duration::from_millis(1));
        }),
        ("source tool", |c| {
            c.untrusted_by[0].tool = "read_file".into()
        }),
        ("source call", |c| c.untrusted_by[0].call = CallId(3)),
        ("source read", |c| {
            c.untrusted_by[0].read = Some(String::new())
        }),
        ("sources", |c| c.untrusted_by.clear()),
    ];
    for (field, change) in changes {
        let mut c = card();
        change(&mut c);
        assert_ne!(c.bound(), base, "{field} is not bound");
    }
    let mut c = card();
    c.approval = "b".into();
    c.binding = Hash32::from_bytes([1; 32]);
    assert_eq!(c.bound(), base);
}

/// A refusal's word for people is its wire name, never its Rust name.
#[test]
fn refusal_as_str_is_the_serde_name() {
    use proto::approval::Refusal;
    for refusal in [
        Refusal::Unknown,
        Refusal::Expired,
        Refusal::AlreadyUsed,
        Refusal::Changed,
        Refusal::NotOwner,
        Refusal::NotOffered,
        Refusal::AllowancesFull,
    ] {
        // Every variant is listed above: a new one fails to compile here.
        match refusal {
            Refusal::Unknown
            | Refusal::Expired
            | Refusal::AlreadyUsed
            | Refusal::Changed
            | Refusal::NotOwner
            | Refusal::NotOffered
            | Refusal::AllowancesFull => {}
        }
        let wire = serde_json::to_string(&refusal).expect("encode");
        assert_eq!(wire, format!("\"{}\"", refusal.as_str()));
    }
}

/// The session offer is bound: its presence, its scope's kind and value and how long it
/// lasts each change the binding. A card without one binds exactly as cards did before
/// offers existed, so an older client's binding still holds for it.
#[test]
fn the_binding_covers_the_session_offer() {
    use proto::allowance::{Scope, SessionOffer};
    let without = card().bound();
    // The binding of the card above before offers existed (computed then, kept here).
    assert_eq!(
        without.to_hex(),
        "727217f09eebb102992be2c9aaed64b811de56a732fb0161e625092825f85fe7",
        "a card without an offer binds as before"
    );
    let offered = |scope: Scope, lasts_secs: u32| {
        let mut c = card();
        c.session_offer = Some(SessionOffer { scope, lasts_secs });
        c.bound()
    };
    let path = |p: &str| Scope::Path { path: p.into() };
    let base = offered(path("/x"), 3600);
    assert_ne!(base, without, "the offer is bound");
    for (what, other) in [
        ("value", offered(path("/y"), 3600)),
        ("kind", offered(Scope::Note { name: "/x".into() }, 3600)),
        ("length", offered(path("/x"), 3599)),
        ("grant scope", offered(Scope::Grant, 3600)),
    ] {
        assert_ne!(other, base, "{what} is not bound");
    }
    // An empty value and the whole grant differ by the kind.
    assert_ne!(
        offered(
            Scope::Host {
                host: String::new()
            },
            1
        ),
        offered(Scope::Grant, 1)
    );
}
