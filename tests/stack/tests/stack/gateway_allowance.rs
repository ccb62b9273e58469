//! Allow for this session over the gateway link: the owner's `:repeat:` reaction on the
//! approval post (fake Mattermost, the real stack) allows the session's later calls under
//! the same path, audited with the post; revoked, or once the session's label rises, the
//! next call posts a card again; it expires; and on the card of an `always_ask` grant the
//! reaction is refused, said in the post's thread, and audited.

use std::time::Duration;

use serde_json::Value;
use stack::{BOT, Gateway, Home, OWNER, post_id, posts, replies_with};

use proto::allowance::Scope;
use proto::approval::Refusal;
use proto::{AuditEvent, AuditLine, DecisionRecord};

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
tool_result_contains = "hunter2"
[rule.answer]
text = "The key is read."

[[rule]]
[rule.match]
tool_result_contains = "denied"
[rule.answer]
text = "That was refused."

[[rule]]
[rule.match]
user_contains = "key"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"VAULT/key.txt"}'

[[rule]]
[rule.match]
user_contains = "mail"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"INBOX/mail.txt"}'

[default]
text = "Hello."
"#;

fn setup(name: &str, broker: &str, extra: &str) -> (Home, Gateway, stack::Agent, String) {
    let home = Home::new(name, broker);
    let inbox = home.files("inbox", &[("mail.txt", "hello mail")]);
    let vault = home.files("vault", &[("key.txt", "hunter2")]);
    let grant = |mode: &str, extra: &str, dir: &std::path::Path| {
        format!(
            "tool = \"read_file\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\nuntrusted = false\n\
             {extra}\n[constraints]\npaths = [\"{}\"]\n",
            dir.display()
        )
    };
    home.write_grant("inbox", &grant("ask", extra, &inbox));
    home.write_grant("vault", &grant("auto", "result_class = \"secret\"", &vault));
    let gw = home.start_gateway(
        &[OWNER.id],
        "edit_interval = \"10ms\"\ntyping_interval = \"50ms\"",
    );
    let script = SCRIPT
        .replace("INBOX", &inbox.display().to_string())
        .replace("VAULT", &vault.display().to_string());
    let agent = home.start_agent(&script, "");
    let mail = inbox.join("mail.txt").display().to_string();
    (home, gw, agent, mail)
}

/// The approval root posts gatewayd made, oldest first.
fn cards(state: &Value) -> Vec<Value> {
    posts(state)
        .into_iter()
        .filter(|p| {
            p["user_id"] == BOT
                && p["root_id"] == ""
                && p["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("Approval needed"))
        })
        .collect()
}

/// Waits for the `n`th approval post, and until gatewayd has recorded it (a reaction it
/// sees before then is not yet on an approval post of its); its id and text.
fn card(home: &Home, gw: &Gateway, n: usize) -> (String, String) {
    let state = gw.wait(&format!("approval post {n}"), |s| cards(s).len() >= n);
    let post = cards(&state).remove(n - 1);
    let text = post["message"].as_str().expect("message").to_owned();
    let id = post_id(&post);
    let file = home.gateway_state_file();
    stack::wait_until("the card recorded", Duration::from_secs(10), || {
        std::fs::read_to_string(&file).is_ok_and(|t| t.contains(&id))
    });
    (id, text)
}

/// Posts `text` in the thread of `root` and waits until the bot has said `answer` there
/// `times` times in all.
fn turn(gw: &Gateway, root: &str, text: &str, answer: &str, times: usize) {
    gw.post(OWNER, text, Some(root));
    gw.wait(&format!("{answer:?} {times} times"), |s| {
        replies_with(s, root, answer).len() >= times
    });
}

fn approved(home: &Home) -> Vec<(Option<String>, Option<String>)> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => match r.decision {
                DecisionRecord::Approved {
                    post, allowance, ..
                } => Some((post, allowance)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn granted(home: &Home) -> Vec<(String, String, Option<String>, Scope)> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Event(AuditEvent::AllowanceGranted {
                allowance,
                by,
                post,
                scope,
                ..
            }) => Some((allowance, by, post, scope)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_owners_repeat_reaction_allows_the_session_until_revoked_or_its_label_rises() {
    let (home, gw, _agent, mail) = setup("gw-allow", "", "");
    let root = gw.post(OWNER, "read my mail please", None);
    let (a, text) = card(&home, &gw, 1);
    for part in [
        format!(
            "**For this session:** `read_file` at or under `{mail}`, for 1 h, while the label stays private or below\n"
        ),
        "React with :+1: to approve, :repeat: to approve for this session".to_owned(),
    ] {
        assert!(text.contains(&part), "{part:?} in {text}");
    }
    gw.react(OWNER, &a, "repeat");
    gw.wait_reply(&root, "The mail says hello.");
    gw.wait_post("the post shows the outcome", &a, |m| {
        m.ends_with(&format!(
            ":repeat: **Approved for this session** by `{}`.",
            OWNER.id
        ))
    });
    // The same file again, in the same conversation: no card, it runs.
    turn(&gw, &root, "read my mail again", "The mail says hello.", 2);
    assert_eq!(cards(&gw.state()).len(), 1, "no second card");
    let g = granted(&home);
    assert_eq!(g.len(), 1, "{g:?}");
    let (allowance, by, post, scope) = g[0].clone();
    assert_eq!((by.as_str(), post.as_deref()), (OWNER.id, Some(a.as_str())));
    assert_eq!(scope, Scope::Path { path: mail.clone() });
    assert_eq!(
        approved(&home),
        [(Some(a.clone()), None), (None, Some(allowance.clone()))]
    );

    // Revoked (the terminal's command; the allowance is one, whatever channel made it):
    // the next call posts a card again.
    assert!(
        home.bxctl(&["approvals", "revoke", &allowance])
            .status
            .success()
    );
    gw.post(OWNER, "the mail once more", Some(&root));
    let (b, _) = card(&home, &gw, 2);
    gw.react(OWNER, &b, "repeat");
    gw.wait("the third answer", |s| {
        replies_with(s, &root, "The mail says hello.").len() >= 3
    });
    assert_eq!(granted(&home).len(), 2);

    // The session reads a secret: its label rises above the one the owner answered at,
    // and the next call posts a card again, at secret.
    turn(&gw, &root, "read the key", "The key is read.", 1);
    gw.post(OWNER, "and my mail", Some(&root));
    let (c, text) = card(&home, &gw, 3);
    assert!(text.contains("**taint:** secret"), "{text}");
    gw.react(OWNER, &c, "-1");
    gw.wait_reply(&root, "That was refused.");
    home.assert_audit_good();
}

#[test]
fn an_allowance_given_on_mattermost_expires() {
    let (home, gw, _agent, _mail) = setup("gw-allow-ttl", "allowance_ttl = \"8s\"\n", "");
    let root = gw.post(OWNER, "read my mail please", None);
    let (a, text) = card(&home, &gw, 1);
    assert!(text.contains("for 8 s, while"), "{text}");
    gw.react(OWNER, &a, "repeat");
    gw.wait_reply(&root, "The mail says hello.");
    turn(&gw, &root, "read my mail again", "The mail says hello.", 2);
    assert_eq!(cards(&gw.state()).len(), 1);
    let granted_at = home.audit_lines().into_iter().find_map(|l| match l {
        AuditLine::Event(AuditEvent::AllowanceGranted { expires, .. }) => Some(expires),
        _ => None,
    });
    let expires = granted_at.expect("granted");
    let wait = expires
        .as_millis()
        .saturating_sub(proto::Timestamp::now().as_millis());
    std::thread::sleep(Duration::from_millis(wait + 200));
    gw.post(OWNER, "the mail once more", Some(&root));
    let (b, _) = card(&home, &gw, 2);
    gw.react(OWNER, &b, "-1");
    gw.wait_reply(&root, "That was refused.");
    home.assert_audit_good();
}

#[test]
fn on_an_always_ask_card_the_repeat_reaction_is_refused_said_and_audited() {
    let (home, gw, _agent, _mail) = setup("gw-allow-always", "", "always_ask = true");
    let root = gw.post(OWNER, "read my mail please", None);
    let (a, text) = card(&home, &gw, 1);
    assert!(!text.contains("For this session"), "{text}");
    assert!(!text.contains(":repeat:"), "{text}");
    gw.react(OWNER, &a, "repeat");
    gw.wait_reply(&a, "cannot be approved for the session");
    assert!(home.audit_lines().iter().any(|l| matches!(
        l,
        AuditLine::Event(AuditEvent::ApprovalRefused {
            refusal: Refusal::NotOffered,
            by,
            ..
        }) if by == OWNER.id
    )));
    // It still waits: the owner's approve answers it.
    gw.react(OWNER, &a, "+1");
    gw.wait_reply(&root, "The mail says hello.");
    // And the next call asks again.
    gw.post(OWNER, "read my mail again", Some(&root));
    let (b, _) = card(&home, &gw, 2);
    gw.react(OWNER, &b, "-1");
    gw.wait_reply(&root, "That was refused.");
    assert!(granted(&home).is_empty());
    home.assert_audit_good();
}
