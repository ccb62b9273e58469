//! Approval cards (`card`): fences, huge cards, the provenance line, outcomes.

use gatewayd::card::{HOW_TO, fenced, render, settled};
use gatewayd::render::POST_LIMIT;
use proto::approval::{ApprovalCard, CallRef, Refusal, Verdict};
use proto::gateway::Update;

#[test]
fn the_fence_outruns_every_backtick_run() {
    assert_eq!(fenced("a"), "```\na\n```");
    assert_eq!(fenced("x ````` y"), "``````\nx ````` y\n``````");
}

#[test]
fn every_post_of_a_huge_card_fits_and_keeps_all_arguments() {
    let mut card: ApprovalCard = serde_json::from_str(
        r#"{"approval":"3f9c2a7d1b6e4f80a5c9d2e1f0b3a4c5","binding":"6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b","session":"s-1","call":4,"tool":"write_file","arguments":"","grant":"g","session_taint":"private","untrusted":true,"untrusted_by":[],"expires":"2026-09-17T08:15:00.000Z"}"#,
    )
    .expect("card");
    card.arguments = format!("{}{}\u{202e}", "`".repeat(20_000), "x".repeat(30_000));
    card.untrusted_by = (0..500)
        .map(|i| CallRef {
            tool: "http_fetch".into(),
            call: proto::CallId(i),
            read: Some(format!("https://e.org/{}", "p".repeat(200))),
            session: None,
        })
        .collect();
    let posts = render(&card, "https://m", Some("root"));
    assert!(posts.len() > 3);
    assert!(posts.iter().all(|p| p.chars().count() <= POST_LIMIT));
    let named = posts[0].matches("(read `https://e.org/").count();
    assert!(named >= 5, "{}", posts[0]);
    assert!(posts[0].contains(&format!("{} more", 500 - named)));
    let xs: usize = posts.iter().map(|p| p.matches('x').count()).sum();
    assert!(xs >= 30_000, "every part of the arguments is shown");
    assert!(posts.concat().contains("\\u{202e}"));
}

#[test]
fn the_provenance_line_names_what_each_untrusted_call_read_as_inert_code() {
    let mut card: ApprovalCard = serde_json::from_str(
        r#"{"approval":"3f9c2a7d1b6e4f80a5c9d2e1f0b3a4c5","binding":"6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b","session":"s-1","call":9,"tool":"read_file","arguments":"{}","grant":"g","session_taint":"private","untrusted":true,"untrusted_by":[],"expires":"2026-09-17T08:15:00.000Z"}"#,
    )
    .expect("card");
    let source = |tool: &str, call, read: Option<&str>| CallRef {
        tool: tool.into(),
        call: proto::CallId(call),
        read: read.map(str::to_owned),
        session: None,
    };
    card.untrusted_by = vec![
        source(
            "http_fetch",
            2,
            Some("https://evil.example/a?b=`c`\u{202e}[x](y)\n"),
        ),
        source("read_file", 3, Some("/home/o/x.md")),
        source("consult", 4, None),
    ];
    // A call of another session, whose result the prompt replayed, names its session.
    card.untrusted_by[1].session = Some(proto::SessionId::new("s-page").expect("id"));
    let post = &render(&card, "https://m", None)[0];
    let line = post
        .lines()
        .find(|l| l.contains("has read untrusted content"))
        .expect("provenance line");
    assert!(
        line.ends_with(
            "**yes**, from `http_fetch` call 2 (read ``https://evil.example/a?b=`c`\\u{202e}[x](y)\\u{000a}``), \
             `read_file` call 3 of session `s-page` (read `/home/o/x.md`), `consult` call 4"
        ),
        "{line}"
    );
}

/// A card that offers "allow for this session" says what it would allow (the scope's value
/// as inline code, how long, up to which label) and how to answer it (`:repeat:` or a
/// `session` reply); a card that does not offer it says neither.
#[test]
fn the_session_offer_is_shown_with_its_answer_only_where_it_is_offered() {
    let mut card: ApprovalCard = serde_json::from_str(
        r#"{"approval":"3f9c2a7d1b6e4f80a5c9d2e1f0b3a4c5","binding":"6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b","session":"s-1","call":9,"tool":"http_fetch","arguments":"{}","grant":"web","session_taint":"private","untrusted":true,"untrusted_by":[],"expires":"2026-09-17T08:15:00.000Z"}"#,
    )
    .expect("card");
    let plain = &render(&card, "https://m", None)[0];
    assert!(!plain.contains("For this session"), "{plain}");
    assert!(!plain.contains(":repeat:"), "{plain}");
    assert!(
        plain.contains(&format!(
            "{HOW_TO} or :-1: to deny, or reply `approve` or `deny` in this thread."
        )),
        "{plain}"
    );
    card.session_offer = Some(proto::allowance::SessionOffer {
        scope: proto::allowance::Scope::Host {
            host: "evil.example`[x](y)".into(),
        },
        lasts_secs: 3600,
    });
    let offered = &render(&card, "https://m", None)[0];
    assert!(
        offered.contains(
            "**For this session:** `http_fetch` to ``evil.example`[x](y)``, for 1 h, while the \
             label stays private, untrusted or below\n"
        ),
        "{offered}"
    );
    assert!(
        offered.contains(&format!(
            "{HOW_TO}, :repeat: to approve for this session, or :-1: to deny; or reply \
             `approve`, `session` or `deny` in this thread."
        )),
        "{offered}"
    );
    let decided = Update::Decided {
        verdict: Verdict::AllowSession,
        by: "o".into(),
    };
    let after = settled(offered, &card.approval, &decided).expect("settled");
    assert!(
        after.contains("**For this session:**"),
        "the offer stays: {after}"
    );
    assert!(
        after.ends_with(":repeat: **Approved for this session** by `o`."),
        "{after}"
    );
}

#[test]
fn an_outcome_replaces_the_how_to_and_an_earlier_outcome() {
    let msg =
        format!("head\n```\nApproval `x`\n{HOW_TO} forged\n```\nApproval `x`\n{HOW_TO} or :-1: …");
    let expired = settled(&msg, "x", &Update::Expired).expect("settled");
    assert!(expired.starts_with(&format!("head\n```\nApproval `x`\n{HOW_TO} forged\n```\n")));
    assert!(expired.ends_with("Approval `x`\n:hourglass: **Expired**: nobody answered in time."));
    let approved = Update::Decided {
        verdict: Verdict::Approve,
        by: "o".into(),
    };
    let after = settled(&expired, "x", &approved).expect("settled");
    assert!(after.ends_with("Approval `x`\n:white_check_mark: **Approved** by `o`."));
    assert_eq!(
        settled(&after, "x", &approved).as_deref(),
        Some(after.as_str())
    );
    assert!(settled(&msg, "y", &approved).is_none());
    let stopped = settled(&msg, "x", &Update::Stopped).expect("settled");
    assert!(
        stopped.ends_with(
            "Approval `x`\n:no_entry: **Denied**: brokerd stopped before anyone answered."
        )
    );
    let refused = Update::Refused {
        by: "u".into(),
        refusal: Refusal::NotOwner,
    };
    assert!(settled(&msg, "x", &refused).is_none());
}
