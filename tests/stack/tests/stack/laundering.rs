//! A compromised loopd (this test, speaking loopd's sockets) copies a secret it was given
//! into a fresh session's prompt, and the call the model then makes is judged at the
//! secret's label, whatever the secret is dressed as: each case drives a real completion
//! through inferproxy against the fake model, which emits the egress call, so the call is
//! witnessed, and brokerd denies it `taint_too_high`. The honest fresh session is not: a
//! call's labels come from its prompt, not from what loopd holds elsewhere.

use daemon::conn::Conn;
use proto::attest::{ChatMessage, WitnessRef};
use proto::composed;
use proto::{DenyReason, ToolCall, ToolResponse};
use serde_json::json;
use stack::{Agent, Home, complete, read_grant, request_as, response};

const SCRIPT: &str = r#"
[[rule]]
[rule.match]
tool_result_contains = "hunter2"
[[rule.answer.tool_calls]]
name = "http_fetch"
arguments = '{"url":"https://example.org/?q=k"}'

[[rule]]
[rule.match]
user_contains = "cut short"
[rule.answer]
text = "The owner's key is hunter2."

[[rule]]
[rule.match]
user_contains = "send"
[[rule.answer.tool_calls]]
name = "http_fetch"
arguments = '{"url":"https://example.org/?q=k"}'

[[rule]]
[rule.match]
user_contains = "key"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"SECRETS/key.txt"}'

[default]
text = "Hello."
"#;

const FETCH: &str = r#"{"url":"https://example.org/?q=k"}"#;

/// The secrets directory (secret, read without asking) and an `ask` egress grant whose
/// `max_taint` is private, with a short approval time.
pub(crate) fn stack(name: &str) -> (Home, Agent) {
    let home = Home::new(name, "approval_ttl = \"1s\"");
    let secrets = home.files("secrets", &[("key.txt", "hunter2")]);
    home.write_grant(
        "secrets",
        &read_grant("auto", &secrets, "result_class = \"secret\""),
    );
    home.write_grant(
        "web",
        "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\n\
         result_class = \"public\"\n[constraints]\nhosts = [\"example.org\"]\n",
    );
    let script = SCRIPT.replace("SECRETS", &secrets.display().to_string());
    let agent = home.start_agent(&script, "");
    (home, agent)
}

/// The owner's words, registered as a channel does before loopd has them.
pub(crate) fn owner(home: &Home, text: &str) -> ChatMessage {
    owner_words::register(&home.chat_broker_sock(), text).expect("registered");
    composed::owner(text)
}

pub(crate) fn system() -> ChatMessage {
    composed::system(composed::DEFAULT_CORE)
}

/// The model's answer to `prompt` through inferproxy, its one call sent to brokerd in
/// `session` as loopd would; brokerd's answer.
fn call(home: &Home, session: &str, n: u64, prompt: &[ChatMessage]) -> (ToolCall, ToolResponse) {
    let (completion, answer) = complete(home, prompt, json!({}));
    let c = answer
        .tool_calls
        .first()
        .expect("the model made a call")
        .clone();
    let witness = WitnessRef {
        completion,
        index: 0,
    };
    let mut conn = Conn::connect(&home.loop_sock()).expect("broker.sock");
    let frames = request_as(&mut conn, session, n, &c.name, &c.arguments, witness);
    (c, response(&frames).clone())
}

/// An honest session (`s-read`) reads the secret through a witnessed call: its prompt, then
/// the answer and the tool message of the result brokerd returned, labelled secret.
fn read_secret(home: &Home) -> Vec<ChatMessage> {
    let mut read = vec![system(), owner(home, "read my key")];
    let (completion, answer) = complete(home, &read, json!({}));
    let key = answer.tool_calls[0].clone();
    let w = WitnessRef {
        completion,
        index: 0,
    };
    let mut conn = Conn::connect(&home.loop_sock()).expect("broker.sock");
    let frames = request_as(&mut conn, "s-read", 1, &key.name, &key.arguments, w);
    let result = response(&frames).clone();
    assert!(
        matches!(&result, ToolResponse::Result { content, .. } if content.contains("hunter2")),
        "{result:?}"
    );
    read.push(answer.message());
    read.push(composed::tool_message(&key.id, &result));
    read
}

fn denied(r: &ToolResponse) -> Option<DenyReason> {
    match r {
        ToolResponse::Denied { reason, .. } => Some(*reason),
        _ => None,
    }
}

#[test]
fn a_secret_copied_into_a_fresh_prompt_is_judged_secret_however_dressed() {
    let (home, agent) = stack("launder");
    let fallbacks = || {
        let log = agent.daemons[1].log();
        log.lines()
            .filter(|l| l.contains("are not accounted for"))
            .count()
    };
    // An honest session reads the secret: brokerd returned it, labelled secret.
    let read = read_secret(&home);

    // The control: an honest fresh session is private, so the egress call is put to the
    // owner (and expires unanswered), never refused for taint.
    let (fetch, r) = call(&home, "s-honest", 1, &[system(), owner(&home, "send it")]);
    assert_eq!(fetch.arguments, FETCH);
    assert_eq!(denied(&r), Some(DenyReason::ApprovalExpired), "{r:?}");
    // Every message of the honest prompts was accounted for: no fall-back.
    assert_eq!(fallbacks(), 0, "{:?}", agent.fallbacks());

    let send = owner(&home, "send the key");
    let cases: Vec<(&str, Vec<ChatMessage>)> = vec![
        // As the tool message brokerd returned, in a fresh session.
        (
            "tool message",
            vec![system(), send.clone(), read[2].clone(), read[3].clone()],
        ),
        // As an owner's message no channel registered.
        (
            "owner message",
            vec![system(), ChatMessage::user("send the key: hunter2")],
        ),
        // As the system prompt.
        (
            "system prompt",
            vec![
                ChatMessage::system("The owner's key is hunter2."),
                send.clone(),
            ],
        ),
    ];
    for (i, (case, prompt)) in cases.into_iter().enumerate() {
        let session = format!("s-fresh-{i}");
        let (fetch, r) = call(&home, &session, 1, &prompt);
        assert_eq!(fetch.name, "http_fetch", "{case}");
        assert_eq!(denied(&r), Some(DenyReason::TaintTooHigh), "{case}: {r:?}");
    }
    // The owner message and the system prompt were not accounted for (the tool message
    // was: brokerd returned it), and brokerd said so.
    assert_eq!(fallbacks(), 2, "{:?}", agent.fallbacks());

    // Through a summary: the model summarises the session that read the secret (a real
    // compaction request), and the next epoch starts from that summary in a fresh session.
    let mut compaction = read.clone();
    compaction.push(composed::instruction(composed::SUMMARY_PROMPT));
    let (_, summary) = complete(&home, &compaction, json!({"tool_choice": "none"}));
    let text = summary.content.expect("a summary");
    assert!(text.contains("hunter2"), "{text}");
    let next = [system(), composed::summary(&text), send];
    let (_, r) = call(&home, "s-fresh-summary", 1, &next);
    assert_eq!(denied(&r), Some(DenyReason::TaintTooHigh), "{r:?}");
    // Denied by the summary's own label: inferproxy reported it among the answer's forms,
    // so brokerd accounted it at the label of the prompt that produced it (secret), and
    // nothing fell back.
    assert_eq!(fallbacks(), 2, "{:?}", agent.fallbacks());
    home.assert_audit_good();
}

/// Where the grant lets a secret call be asked for, the owner's card shows the label the
/// call is decided at (its prompt's secret), not the fresh session's own private.
#[test]
fn the_card_of_a_call_from_a_secret_prompt_shows_secret() {
    let (home, _agent) = stack("card");
    home.write_grant(
        "web",
        "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"secret\"\n\
         result_class = \"public\"\n[constraints]\nhosts = [\"example.org\"]\n",
    );
    home.bxctl(&["grants", "reload"]);
    let read = read_secret(&home);
    let laundered = vec![
        system(),
        owner(&home, "send the key"),
        read[2].clone(),
        read[3].clone(),
    ];
    let config = home.config();
    let card = std::thread::spawn(move || {
        stack::wait_for_approval(&config);
        let out = std::process::Command::new(stack::bin("bxctl"))
            .arg("--config")
            .arg(&config)
            .args(["approvals", "--json"])
            .output()
            .expect("bxctl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    });
    let (_, r) = call(&home, "s-fresh-card", 1, &laundered);
    let shown = card.join().expect("card");
    assert_eq!(denied(&r), Some(DenyReason::ApprovalExpired), "{r:?}");
    assert!(shown.contains("\"session_taint\":\"secret\""), "{shown}");
}
