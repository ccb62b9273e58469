//! The prompt-cache simulation and slot pinning, seen from a client.

use crate::common::{Conn, Server};
use serde_json::{Value, json};

const SCRIPT: &str = r#"
[server]
total_slots = 2

# Tool results first: the user text that asked for the call is still the last user text.
[[rule]]
match = { tool_result_contains = "" }
answer = { text = "It is sunny in Paris." }

[[rule]]
match = { user_contains = "weather" }
answer = { tool_calls = [{ name = "get_weather", arguments = '{"city": "Paris"}' }] }

[default]
text = "Noted: {last_user}"
"#;

fn user(text: &str) -> Value {
    json!({ "role": "user", "content": text })
}

/// The assistant message a client replays: exactly what the server returned.
fn replay_of(body: &Value) -> Value {
    let message = &body["choices"][0]["message"];
    let mut replay = json!({ "role": "assistant", "content": message["content"] });
    if let Some(calls) = message.get("tool_calls") {
        replay["tool_calls"] = calls.clone();
    }
    replay
}

fn cache_n(body: &Value) -> u64 {
    body["timings"]["cache_n"]
        .as_u64()
        .expect("timings.cache_n")
}

fn prompt_tokens(body: &Value) -> u64 {
    body["usage"]["prompt_tokens"]
        .as_u64()
        .expect("usage.prompt_tokens")
}

fn total_tokens(body: &Value) -> u64 {
    body["usage"]["total_tokens"]
        .as_u64()
        .expect("usage.total_tokens")
}

/// Runs `turns` user turns (the weather question brings a tool call and its result) on
/// `slot`, replaying every reply exactly; returns each response body.
fn conversation(fake: &Server, slot: i64, turns: &[&str]) -> Vec<Value> {
    let mut messages = vec![json!({ "role": "system", "content": "You are terse." })];
    let mut bodies = Vec::new();
    for text in turns {
        messages.push(user(text));
        loop {
            let request = json!({ "messages": messages, "id_slot": slot, "tools": [
                { "type": "function", "function": { "name": "get_weather", "parameters": {} } }
            ]});
            let body = fake.chat(&request).json();
            messages.push(replay_of(&body));
            let called = body["choices"][0]["finish_reason"] == "tool_calls";
            bodies.push(body);
            if !called {
                break;
            }
            messages.push(json!({ "role": "tool", "tool_call_id": "x", "content": "sunny, 18C" }));
        }
    }
    bodies
}

#[test]
fn exact_replay_reuses_the_whole_previous_text_every_turn() {
    let fake = Server::fake(SCRIPT);
    let bodies = conversation(
        &fake,
        0,
        &["hello", "what is the weather?", "thanks", "bye"],
    );
    assert_eq!(bodies.len(), 5, "4 turns, one with a tool call");
    assert_eq!(cache_n(&bodies[0]), 0, "cold slot");
    for pair in bodies.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        // Everything the slot held (prompt and reply) is reused, to the token.
        assert!(
            cache_n(after) + 1 >= total_tokens(before) && cache_n(after) > cache_n(before),
            "cache_n {} after a request of {} tokens",
            cache_n(after),
            total_tokens(before)
        );
    }
    let last = bodies.last().expect("bodies");
    let share = cache_n(last) as f64 / prompt_tokens(last) as f64;
    assert!(share > 0.8, "cache share {share}");
}

#[test]
fn rewritten_history_makes_cache_n_drop() {
    let fake = Server::fake(SCRIPT);
    let bodies = conversation(&fake, 0, &["hello", "what is the weather?", "thanks"]);
    let warm = cache_n(bodies.last().expect("bodies"));
    // Same conversation, but the client re-serialised the tool call arguments.
    let request = json!({ "id_slot": 0, "tools": [
        { "type": "function", "function": { "name": "get_weather", "parameters": {} } }],
    "messages": [
        { "role": "system", "content": "You are terse." },
        user("hello"),
        { "role": "assistant", "content": "Noted: hello" },
        user("what is the weather?"),
        { "role": "assistant", "content": "", "tool_calls": [{ "id": "a", "type": "function",
          "function": { "name": "get_weather", "arguments": "{\"city\":\"Paris\"}" } }] },
        { "role": "tool", "tool_call_id": "x", "content": "sunny, 18C" },
        { "role": "assistant", "content": "It is sunny in Paris." },
        user("thanks"), { "role": "assistant", "content": "Noted: thanks" }, user("more")
    ]});
    let rewritten = fake.chat(&request).json();
    assert!(
        cache_n(&rewritten) < warm / 2 + 40,
        "rewriting the tool call must lose the cache after it: {} vs warm {warm}",
        cache_n(&rewritten)
    );
    let log = fake.get("/fake/requests").json();
    let last = log.as_array().and_then(|l| l.last()).expect("log entry");
    assert_eq!(last["cache_n"], rewritten["timings"]["cache_n"]);
    assert!(
        last["prompt"]
            .as_str()
            .is_some_and(|p| p.contains(r#""arguments": {"city":"Paris"}"#))
    );
}

#[test]
fn an_identical_request_reuses_all_but_the_last_token_and_cache_prompt_false_none() {
    let fake = Server::fake(SCRIPT);
    let request = json!({ "messages": [user("hello")] });
    let first = fake.chat(&request).json();
    let again = fake.chat(&request).json();
    assert_eq!(cache_n(&first), 0);
    assert_eq!(cache_n(&again), prompt_tokens(&again) - 1);
    assert_eq!(again["timings"]["prompt_n"], 1);
    let mut no_cache = request.clone();
    no_cache["cache_prompt"] = json!(false);
    let cold = fake.chat(&no_cache).json();
    assert_eq!(
        (cache_n(&cold), cold["timings"]["prompt_n"].as_u64()),
        (0, Some(prompt_tokens(&cold)))
    );
}

#[test]
fn pinned_sessions_keep_their_own_slots_warm() {
    let fake = Server::fake(SCRIPT);
    let mut a = vec![user("alpha one")];
    let mut b = vec![user("bravo one")];
    let mut last = (Value::Null, Value::Null);
    for turn in 0..3 {
        for (slot, messages) in [(0, &mut a), (1, &mut b)] {
            let body = fake
                .chat(&json!({ "messages": messages, "id_slot": slot }))
                .json();
            if turn > 0 {
                assert!(cache_n(&body) > 0, "slot {slot} turn {turn} lost its cache");
            }
            messages.push(replay_of(&body));
            messages.push(user(&format!("turn {turn}")));
            if slot == 0 {
                last.0 = body
            } else {
                last.1 = body
            }
        }
    }
    let log = fake.get("/fake/requests").json();
    let slots: Vec<u64> = log
        .as_array()
        .expect("log")
        .iter()
        .map(|e| e["slot"].as_u64().expect("slot"))
        .collect();
    assert_eq!(slots, vec![0, 1, 0, 1, 0, 1]);
    let view = fake.get("/slots").json();
    for slot in [0, 1] {
        assert_eq!(view[slot]["id"], slot);
        assert!(view[slot]["id_task"].is_u64() && view[slot]["n_prompt_tokens"].as_u64() > Some(0));
    }
    let _ = last;
}

#[test]
fn two_sessions_sharing_one_pinned_slot_evict_each_other() {
    let fake = Server::fake(SCRIPT);
    let a = json!({ "messages": [user("alpha alpha alpha alpha")], "id_slot": 0 });
    let b = json!({ "messages": [user("bravo bravo bravo bravo")], "id_slot": 0 });
    fake.chat(&a);
    fake.chat(&b);
    let again = fake.chat(&a).json();
    // Only `<|im_start|>user\n` (4 tokens of 4 bytes) is shared with the other session's text.
    assert!(cache_n(&again) <= 4, "cache_n {}", cache_n(&again));
}

#[test]
fn unpinned_requests_find_the_slot_holding_their_prefix() {
    let fake = Server::fake(SCRIPT);
    let charlie = "charlie ".repeat(20);
    let first = fake.chat(&json!({ "messages": [user(&charlie)] })).json();
    fake.chat(&json!({ "messages": [user(&"delta ".repeat(20))] }));
    let messages = json!([user(&charlie), replay_of(&first), user("next")]);
    let body = fake.chat(&json!({ "messages": messages })).json();
    assert!(
        cache_n(&body) + 1 >= total_tokens(&first),
        "cache_n {}",
        cache_n(&body)
    );
}

#[test]
fn a_pinned_request_waits_for_its_busy_slot() {
    let fake = Server::fake(
        "[[rule]]\nmatch = { user_contains = \"slow\" }\nanswer = { text = \"done\", delay_ms = 400 }\n",
    );
    let addr = fake.addr;
    let slow = std::thread::spawn(move || {
        Conn::open(addr).send(
            "POST",
            "/v1/chat/completions",
            Some(
                json!({ "messages": [user("slow")], "id_slot": 0 })
                    .to_string()
                    .as_bytes(),
            ),
        )
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    let busy = fake.get("/slots").json();
    assert_eq!(busy[0]["is_processing"], true);
    let started = std::time::Instant::now();
    let fast = fake.chat(&json!({ "messages": [user("fast")], "id_slot": 0 }));
    assert_eq!(fast.status, 200);
    assert!(
        started.elapsed().as_millis() >= 200,
        "must wait for the slow request"
    );
    assert_eq!(slow.join().expect("slow request").status, 200);
}

/// The usage and timings of one answer: `(prompt_tokens, cache_n, predicted_n)`.
fn counts(body: &Value) -> (u64, u64, u64) {
    let n = |v: &Value| v.as_u64().expect("a count");
    (
        prompt_tokens(body),
        cache_n(body),
        n(&body["timings"]["predicted_n"]),
    )
}

#[test]
fn an_exact_replay_reuses_the_prompt_and_the_reply_but_the_end_token() {
    let fake = Server::fake(SCRIPT);
    let mut messages = vec![user("note this down")];
    let first = fake.chat(&json!({ "messages": messages })).json();
    let (prompt, _, predicted) = counts(&first);
    messages.push(replay_of(&first));
    messages.push(user("thanks"));
    let next = fake.chat(&json!({ "messages": messages })).json();
    // The slot held the prompt and the reply's tokens; the end token, sampled last, never
    // reached it (as on the real server: cache_n = prompt_tokens + predicted_n - 1).
    assert_eq!(cache_n(&next), prompt + predicted - 1);
}

#[test]
fn a_reply_generated_with_an_odd_split_misses_the_cache_from_that_token_when_replayed() {
    let script = r#"
[[rule]]
match = { user_contains = "odd" }
answer = { text = "abcdefgh}}ijkl", split_token = 2 }

[default]
text = "abcdefgh}}ijkl"
"#;
    let fake = Server::fake(script);
    for (ask, lost) in [("even", 0), ("odd", 2)] {
        let mut messages = vec![user(ask)];
        let first = fake
            .chat(&json!({ "messages": messages, "id_slot": 0 }))
            .json();
        let (prompt, _, predicted) = counts(&first);
        assert_eq!(first["choices"][0]["message"]["content"], "abcdefgh}}ijkl");
        messages.push(replay_of(&first));
        messages.push(user("and?"));
        let next = fake
            .chat(&json!({ "messages": messages, "id_slot": 0 }))
            .json();
        // "abcd" "efgh" "}}ij" "kl" replayed; the odd reply was sampled as
        // "abcd" "efgh" "}" "}ij" "kl": the cache ends at its third token, and the two
        // tokens from there (one more was generated) are lost.
        assert_eq!(
            cache_n(&next),
            prompt + predicted - 1 - lost - u64::from(lost > 0),
            "{ask}: {next}"
        );
    }
}
