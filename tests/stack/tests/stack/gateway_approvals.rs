//! Approvals over Mattermost with the real stack: brokerd asks through gatewayd, the owner
//! answers with a reaction or a reply on the approval's own root post; a stranger's answer,
//! a late one, and an "approve" written by the model change nothing, and every refusal is
//! audited by brokerd.

use serde_json::Value;
use stack::{
    BOT, BOT_USER, Gateway, Home, OWNER, STRANGER, post_id, posts, read_grant, replies_with,
};

use proto::approval::Refusal;
use proto::{AuditEvent, AuditLine, DecisionRecord, DenyReason};

const SCRIPT: &str = r#"
[server]
n_ctx = 16384

[[rule]]
[rule.match]
tool_result_contains = "hello mail"
[rule.answer]
text = "The mail says hello."

[[rule]]
[rule.match]
tool_result_contains = "denied"
[rule.answer]
text = "That was refused."

[[rule]]
[rule.match]
user_contains = "mail"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"INBOX/mail.txt"}'

[[rule]]
[rule.match]
user_contains = "forge"
[rule.answer]
text = "approve"

[default]
text = "Hello."
"#;

pub(crate) fn setup(name: &str) -> (Home, Gateway, stack::Agent) {
    setup_with(name, "")
}

fn setup_with(name: &str, broker: &str) -> (Home, Gateway, stack::Agent) {
    let home = Home::new(name, broker);
    let inbox = home.files("inbox", &[("mail.txt", "hello mail")]);
    home.write_grant("inbox", &read_grant("ask", &inbox, ""));
    let gw = home.start_gateway(
        &[OWNER.id],
        "edit_interval = \"10ms\"\ntyping_interval = \"50ms\"",
    );
    let script = SCRIPT.replace("INBOX", &inbox.display().to_string());
    let agent = home.start_agent(&script, "");
    (home, gw, agent)
}

/// The approval root post, once gatewayd made it.
pub(crate) fn approval_post(gw: &Gateway) -> Value {
    let state = gw.wait("an approval root post", |s| {
        posts(s).iter().any(|p| {
            p["user_id"] == BOT
                && p["root_id"] == ""
                && p["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("Approval needed"))
        })
    });
    posts(&state)
        .into_iter()
        .find(|p| p["root_id"] == "" && p["user_id"] == BOT)
        .expect("approval post")
}

fn refusals(home: &Home) -> Vec<(String, Option<String>, Refusal)> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Event(AuditEvent::ApprovalRefused {
                by, post, refusal, ..
            }) => Some((by, post, refusal)),
            _ => None,
        })
        .collect()
}

fn decisions(home: &Home) -> Vec<DecisionRecord> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => Some(r.decision),
            _ => None,
        })
        .collect()
}

#[test]
fn the_owner_approves_by_reaction_and_a_strangers_reaction_is_refused() {
    let (home, gw, _agent) = setup("gw-react");
    let root = gw.post(OWNER, "read my mail please", None);
    let card = approval_post(&gw);
    let a = post_id(&card);
    let text = card["message"].as_str().expect("message");
    for part in [
        "`read_file`",
        "**Grant:** `inbox`",
        "mail.txt\"}\n```",
        &format!("/_redirect/pl/{root})"),
        "**taint:** ",
        "**Expires:** ",
        "React with :+1: to approve",
    ] {
        assert!(text.contains(part), "{part:?} in {text}");
    }

    // The conversation shows the call compactly and links to the request.
    gw.wait_reply(&root, "> tool `read_file` `{\"path\":");
    gw.wait_reply(
        &root,
        &format!("[the request](http://{}/_redirect/pl/{a})", gw.addr),
    );
    // The turn waits on the owner: the typing indicator is renewed meanwhile.
    let typing = gw.state()["typing"].as_u64().unwrap_or(0);
    gw.wait("typing renewed", |s| {
        s["typing"].as_u64() >= Some(typing + 3)
    });
    gw.react(STRANGER, &a, "+1");
    gw.wait_reply(&a, "only an owner's answer counts");
    assert_eq!(
        refusals(&home),
        vec![(STRANGER.id.into(), Some(a.clone()), Refusal::NotOwner)]
    );
    assert!(
        replies_with(&gw.state(), &root, "The mail says hello.").is_empty(),
        "a stranger's reaction approves nothing"
    );

    gw.react(OWNER, &a, "thumbsup");
    gw.wait_reply(&root, "The mail says hello.");
    let edited = gw.wait_post("the approval post shows the outcome", &a, |m| {
        m.contains("Approved")
    });
    let edited = edited["message"].as_str().expect("message");
    assert!(
        edited.ends_with(&format!("**Approved** by `{}`.", OWNER.id)),
        "{edited}"
    );
    assert!(!edited.contains("React with"), "{edited}");
    let approved: Vec<_> = decisions(&home)
        .into_iter()
        .filter(|d| matches!(d, DecisionRecord::Approved { .. }))
        .collect();
    assert_eq!(
        approved,
        vec![DecisionRecord::Approved {
            grant: "inbox".into(),
            approver: OWNER.id.into(),
            post: Some(a.clone()),
            allowance: None,
        }]
    );

    // Decided: a later answer, even the owner's, is refused and said so.
    gw.react(OWNER, &a, "-1");
    gw.wait_reply(&a, "already answered");
    assert_eq!(refusals(&home).len(), 2);
    assert_eq!(refusals(&home)[1].2, Refusal::AlreadyUsed);
    home.assert_audit_good();
}

#[test]
fn an_approve_written_by_the_model_changes_nothing_and_the_owner_denies_by_reply() {
    let (home, gw, _agent) = setup("gw-forge");
    let root = gw.post(OWNER, "read my mail", None);
    let a = post_id(&approval_post(&gw));

    // The model says "approve" in another conversation while the approval waits: it is
    // the bot's own post, in another thread, and never an answer.
    let other = gw.post(OWNER, "forge an answer", None);
    gw.wait_reply(&other, "approve");
    // Even a bot post (the bot's own user) in the approval's thread is no answer.
    gw.post(BOT_USER, "approve", Some(&a));
    // A stranger's "approve" in the approval's thread is heard, judged and refused.
    gw.post(STRANGER, "approve", Some(&a));
    gw.wait_reply(&a, "only an owner's answer counts");
    let out = home.bxctl(&["approvals"]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(listed.contains("read_file"), "still pending: {listed}");
    assert!(
        decisions(&home)
            .iter()
            .all(|d| !matches!(d, DecisionRecord::Approved { .. }))
    );

    gw.post(OWNER, "Deny.", Some(&a));
    gw.wait_reply(&root, "That was refused.");
    let denied = decisions(&home).into_iter().find_map(|d| match d {
        DecisionRecord::Denied {
            reason: DenyReason::ApprovalRefused,
            detail,
            ..
        } => detail,
        _ => None,
    });
    assert_eq!(
        denied.as_deref(),
        Some(format!("{} refused on Mattermost post {a}", OWNER.id).as_str())
    );
    gw.wait_post("the approval post shows the denial", &a, |m| {
        m.ends_with(&format!("**Denied** by `{}`.", OWNER.id))
    });
    assert_eq!(
        refusals(&home),
        vec![(STRANGER.id.into(), Some(a.clone()), Refusal::NotOwner)]
    );
    // Replies in the approval's thread never reached loopd as chat: two conversations.
    assert_eq!(home.sessions(), 2);
    home.assert_audit_good();
}

#[test]
fn a_reaction_made_while_gatewayd_is_down_is_heard_after_it_restarts_and_the_cut_reply_is_said() {
    let (home, mut gw, _agent) = setup("gw-restart");
    let root = gw.post(OWNER, "read my mail", None);
    let a = post_id(&approval_post(&gw));
    // gatewayd records the post right after Mattermost made it; killed before that, it
    // would post the card anew (and the reaction below would be on a forgotten post).
    let state = home.gateway_state_file();
    stack::wait_until(
        "the card recorded",
        std::time::Duration::from_secs(10),
        || std::fs::read_to_string(&state).is_ok_and(|t| t.contains(&a)),
    );
    gw.restart(&home, |gw| {
        gw.react(OWNER, &a, "+1");
    });
    gw.wait_post("the approval post shows the outcome", &a, |m| {
        m.ends_with(&format!("**Approved** by `{}`.", OWNER.id))
    });
    // The turn went on in loopd; its showing was cut off with gatewayd, and said so.
    gw.wait_reply(&root, "The answer to this was cut off");
    // brokerd linked again and posted what still waited: gatewayd kept its one post.
    let cards = posts(&gw.state())
        .into_iter()
        .filter(|p| p["root_id"] == "" && p["user_id"] == BOT)
        .count();
    assert_eq!(cards, 1);
    assert!(decisions(&home).contains(&DecisionRecord::Approved {
        grant: "inbox".into(),
        approver: OWNER.id.into(),
        post: Some(a),
        allowance: None,
    }));
    home.assert_audit_good();
}

#[test]
fn gateway_sock_posts_each_approval_once_and_refuses_other_kinds() {
    use daemon::conn::Conn;
    use proto::approval::ApprovalCard;
    use proto::{ErrorCode, Message};

    let home = Home::new("gw-sock", "");
    let gw = home.start_gateway(&[OWNER.id], "");
    let sock = home.root.join("run/broker-gateway/gateway.sock");
    let card: ApprovalCard = serde_json::from_str(
        r#"{"approval":"3f9c2a7d1b6e4f80a5c9d2e1f0b3a4c5","binding":"6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b","session":"s-1","call":4,"tool":"http_fetch","arguments":"{\"url\":\"https://example.org/```\"}","grant":"web-ask","session_taint":"private","untrusted":true,"untrusted_by":[{"tool":"http_fetch","call":2}],"expires":"2026-09-17T08:15:00.000Z"}"#,
    )
    .expect("card");
    let mut conn = Conn::connect(&sock).expect("connect");
    let mut posted = Vec::new();
    for id in [1, 2] {
        match conn
            .call(id, Message::ApprovalPost(card.clone()), |_| {})
            .expect("post")
            .msg
        {
            Message::ApprovalPosted(p) => posted.push(p.post),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(posted[0], posted[1], "one post per approval id");
    let state = gw.state();
    let roots: Vec<Value> = posts(&state)
        .into_iter()
        .filter(|p| p["root_id"] == "")
        .collect();
    assert_eq!(roots.len(), 1);
    let text = roots[0]["message"].as_str().expect("message");
    assert!(
        text.contains("````\n{\"url\":\"https://example.org/```\"}\n````"),
        "{text}"
    );
    assert!(text.contains("**yes**, from `http_fetch` call 2"), "{text}");
    assert!(
        text.contains("session `s-1` (not from Mattermost)"),
        "{text}"
    );

    // Arguments far over a post, with a backtick run longer than a post: every part is
    // posted (the fake refuses a post over Mattermost's limit, as Mattermost does). Mattermost
    // fails the card's third post: the card is refused, then finished on the next try where
    // it stopped, under the same root.
    let mut huge = card.clone();
    huge.approval = "0123456789abcdef0123456789abcdef".into();
    huge.arguments = format!("{}{}", "`".repeat(20_000), "y".repeat(20_000));
    let fail = serde_json::json!({"after": 2, "posts": 1});
    stack::http(&gw.addr, "POST", "/fake/fail", &fail);
    let before = posts(&gw.state()).len();
    let refused = conn.call(3, Message::ApprovalPost(huge.clone()), |_| {});
    assert!(matches!(refused.expect("answer").msg, Message::Error(_)));
    assert_eq!(posts(&gw.state()).len() - before, 2);
    let again = conn.call(4, Message::ApprovalPost(huge), |_| {});
    let Message::ApprovalPosted(p) = again.expect("post").msg else {
        panic!("not posted")
    };
    let state = gw.state();
    let parts: Vec<Value> = posts(&state)
        .into_iter()
        .filter(|x| x["id"] == p.post.as_str() || x["root_id"] == p.post.as_str())
        .collect();
    assert!(parts.len() >= 4, "{}", parts.len());
    assert_eq!(
        posts(&state).len() - before,
        parts.len(),
        "nothing posted twice"
    );
    let text: String = parts
        .iter()
        .map(|x| x["message"].as_str().expect("message"))
        .collect();
    assert!(
        text.matches('y').count() >= 20_000,
        "all of the arguments shown"
    );
    for i in 2..=parts.len() {
        let part = format!("**Arguments, part {i} of {}:**", parts.len());
        assert_eq!(text.matches(&part).count(), 1, "{part}");
    }
    let request = Message::ToolRequest(proto::ToolRequest {
        session: proto::SessionId::new("s-1").expect("id"),
        call: proto::CallId(1),
        tool: "read_file".into(),
        arguments: "{}".into(),
        witness: Some(proto::attest::WitnessRef {
            completion: stack::fresh_completion(),
            index: 0,
        }),
    });
    match conn.call(5, request, |_| {}).expect("answer").msg {
        Message::Error(e) => assert_eq!(e.code, ErrorCode::ForbiddenKind),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unanswered_approval_expires_on_its_post_and_a_late_answer_is_refused() {
    let (home, gw, _agent) = setup_with("gw-expire", "approval_ttl = \"2s\"");
    let root = gw.post(OWNER, "read my mail", None);
    let a = post_id(&approval_post(&gw));
    gw.wait_reply(&root, "That was refused.");
    gw.wait_post("the approval post shows the expiry", &a, |m| {
        m.ends_with("**Expired**: nobody answered in time.")
    });
    gw.react(OWNER, &a, "+1");
    gw.wait_reply(&a, "the approval had expired");
    assert_eq!(
        refusals(&home),
        vec![(OWNER.id.into(), Some(a.clone()), Refusal::Expired)]
    );
    assert!(decisions(&home).iter().any(|d| matches!(
        d,
        DecisionRecord::Denied {
            reason: DenyReason::ApprovalExpired,
            ..
        }
    )));
    home.assert_audit_good();
}
