//! Real-peer checks of what issue 12 made the fake do, and of what loopd's compaction relies
//! on (docs/decisions.md L17, L18, K5, K6):
//! - `max_tokens` cuts a tool call mid-arguments, with `finish_reason: "length"`, in the same
//!   shapes streamed or not;
//! - a history with tool-call arguments that are not JSON is refused with the same HTTP 500
//!   body, word for word;
//! - `tool_choice: "none"` renders the tools as before (the summary request shares the
//!   epoch's cached prefix) and a tool call the model writes comes back as text;
//! - a summary in a message of its own after the system prompt leaves the rendered tool
//!   signatures where they were; inside the system text it does not.

use serde_json::{Value, json};

use super::{fake, real, weather_request, with};
use crate::common::{Event, Response, Server, assert_same_shape, assert_streams_alike};

/// `max_tokens` that cut the weather call in its arguments: the real model's tokens, the
/// fake's 4-byte tokens.
const REAL_CUT: u64 = 22;
const FAKE_CUT: u64 = 16;
const WHOLE_ARGUMENTS: &str = "{\"city\": \"Berlin\", \"unit\": \"celsius\"}";

fn cut_request(max_tokens: u64) -> Value {
    with(weather_request(), "max_tokens", json!(max_tokens))
}

/// The arguments a stream's tool-call deltas add up to, and its finish reason.
fn streamed_call(events: &[Event]) -> (String, String) {
    let mut arguments = String::new();
    let mut finish = String::new();
    for e in events {
        let Event::Json(v) = e else { continue };
        let choice = &v["choices"][0];
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = f.to_owned();
        }
        if let Some(a) = choice["delta"]["tool_calls"][0]["function"]["arguments"].as_str() {
            arguments.push_str(a);
        }
    }
    (arguments, finish)
}

fn assert_cut_mid_string(who: &str, arguments: &str) {
    assert!(
        WHOLE_ARGUMENTS.starts_with(arguments) && arguments.len() < WHOLE_ARGUMENTS.len(),
        "{who}: not a cut of the arguments: {arguments:?}"
    );
    assert!(
        serde_json::from_str::<Value>(arguments).is_err(),
        "{who}: {arguments:?}"
    );
    assert_eq!(
        arguments.matches('"').count() % 2,
        1,
        "{who}: cut inside a string: {arguments:?}"
    );
}

/// One pair of servers for both checks: each real-peer server start costs seconds.
#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn a_cut_tool_call_and_the_history_it_poisons_look_the_same() {
    let (real, fake) = (real(), fake());
    a_tool_call_cut_by_max_tokens_looks_the_same(&real, &fake);
    a_history_the_server_cannot_render_gets_the_same_500(&real, &fake);
}

fn a_tool_call_cut_by_max_tokens_looks_the_same(real: &Server, fake: &Server) {
    // Streamed: the same kinds of events, the arguments cut mid-string, `length`.
    let stream = |n| with(cut_request(n), "stream", json!(true));
    let (r, f) = (real.chat(&stream(REAL_CUT)), fake.chat(&stream(FAKE_CUT)));
    assert_eq!((r.status, f.status), (200, 200));
    let (r, f) = (r.events(), f.events());
    assert_streams_alike("cut tool call stream (real vs fake)", &r, &f);
    for (who, events) in [("real", &r), ("fake", &f)] {
        let (arguments, finish) = streamed_call(events);
        assert_eq!(finish, "length", "{who}");
        assert_cut_mid_string(who, &arguments);
    }
    // Not streamed: the same structure, the call in `message.tool_calls`.
    let (r, f) = (
        real.chat(&cut_request(REAL_CUT)),
        fake.chat(&cut_request(FAKE_CUT)),
    );
    assert_eq!((r.status, f.status), (200, 200));
    let (r, f) = (r.json(), f.json());
    assert_same_shape("cut tool call (real vs fake)", &r, &f);
    for (who, body) in [("real", &r), ("fake", &f)] {
        assert_eq!(
            body["choices"][0]["finish_reason"], "length",
            "{who}: {body}"
        );
        let arguments = body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap_or_default();
        assert!(
            WHOLE_ARGUMENTS.starts_with(arguments) && arguments.len() < WHOLE_ARGUMENTS.len(),
            "{who}: {body}"
        );
    }
}

/// The weather history with one more assistant call whose arguments are `arguments`.
fn history_with_call(arguments: &str) -> Value {
    let mut body = weather_request();
    let messages = body["messages"].as_array_mut().expect("messages");
    messages.push(json!({ "role": "assistant", "content": "", "tool_calls": [{
        "id": "cut1", "type": "function",
        "function": { "name": "get_weather", "arguments": arguments } }] }));
    messages.push(json!({ "role": "tool", "tool_call_id": "cut1",
                          "content": "the tool failed: invalid arguments" }));
    messages.push(json!({ "role": "user", "content": "And in Oslo?" }));
    body
}

fn refusal(server: &Server, body: &Value) -> (Response, Value) {
    let r = server.chat(body);
    let v = r.json();
    (r, v)
}

fn a_history_the_server_cannot_render_gets_the_same_500(real: &Server, fake: &Server) {
    // The arguments the real server itself streamed when it cut the call.
    let cut = real.chat(&cut_request(REAL_CUT)).json();
    let cut = cut["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let streamed = {
        let events = real
            .chat(&with(cut_request(REAL_CUT), "stream", json!(true)))
            .events();
        streamed_call(&events).0
    };
    for arguments in [
        cut.as_str(),
        streamed.as_str(),
        "{\"city\": \"Ber",
        "{\"city\":",
        "{\"city\": \"Berlin\"",
        "{\"ci",
        "{\"a\": [1",
        "{\"a\": tr",
        "",
        "{\"a\": 1}}",
    ] {
        for stream in [false, true] {
            let body = with(history_with_call(arguments), "stream", json!(stream));
            let ((r, rv), (f, fv)) = (refusal(real, &body), refusal(fake, &body));
            assert_eq!((r.status, f.status), (500, 500), "{arguments:?}: {rv}");
            assert_eq!(fv, rv, "{arguments:?}: the same body, word for word");
            for h in ["content-type", "connection"] {
                assert_eq!(f.header(h), r.header(h), "{arguments:?}: {h}");
            }
        }
    }
}

/// The prompt the real server renders for `body` (`POST /apply-template`).
fn rendered(real: &Server, body: &Value) -> String {
    let r = real.post("/apply-template", body);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["prompt"].as_str().expect("prompt").to_owned()
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn what_compaction_relies_on_holds_for_the_real_server() {
    let real = real();
    tool_choice_none_keeps_the_tools_rendered_and_the_cache_warm(&real);
    a_summary_after_the_system_prompt_leaves_the_tools_in_place(&real);
}

fn tool_choice_none_keeps_the_tools_rendered_and_the_cache_warm(real: &Server) {
    let epoch = with(weather_request(), "id_slot", json!(0));
    let none = with(epoch.clone(), "tool_choice", json!("none"));
    let prompt = rendered(real, &epoch);
    assert!(prompt.contains("<tools>"), "{prompt}");
    assert_eq!(
        rendered(real, &none),
        prompt,
        "tool_choice none renders the same"
    );
    // The epoch's request, then a summary request continuing it with tool_choice none: it
    // re-processes only what is new.
    let first = real.chat(&epoch).json();
    let prompt_tokens = first["usage"]["prompt_tokens"].as_u64().expect("tokens");
    let mut summary = none;
    let message = &first["choices"][0]["message"];
    let messages = summary["messages"].as_array_mut().expect("messages");
    messages.push(json!({ "role": "assistant", "content": message["content"],
                          "tool_calls": message["tool_calls"] }));
    messages.push(
        json!({ "role": "user", "content": "The conversation is about to be cut \
        short. Write a concise summary of everything above." }),
    );
    summary["max_tokens"] = json!(40);
    let second = real.chat(&summary).json();
    let cache_n = second["timings"]["cache_n"].as_u64().expect("cache_n");
    assert!(
        cache_n >= prompt_tokens,
        "the summary request reused {cache_n} tokens of the epoch's {prompt_tokens}: {second}"
    );
    // Whatever the model writes, a tool call is not parsed out of it.
    assert!(
        second["choices"][0]["message"].get("tool_calls").is_none(),
        "{second}"
    );
    assert_ne!(second["choices"][0]["finish_reason"], "tool_calls");
}

fn a_summary_after_the_system_prompt_leaves_the_tools_in_place(real: &Server) {
    let base = weather_request();
    let system = base["messages"][0].clone();
    let user = json!({ "role": "user", "content": "And in Oslo?" });
    let summary = "Summary of the conversation so far:\nThe owner asked for the weather.";
    let prompt =
        |messages: Vec<Value>| rendered(real, &with(base.clone(), "messages", json!(messages)));
    let plain = prompt(vec![system.clone(), user.clone()]);
    let own = prompt(vec![
        system.clone(),
        json!({ "role": "assistant", "content": summary }),
        user.clone(),
    ]);
    let mut in_system = system.clone();
    in_system["content"] = json!(format!(
        "{}\n\n{summary}",
        system["content"].as_str().unwrap_or_default()
    ));
    let inside = prompt(vec![in_system, user]);
    let tools_end = plain.find("</tools>").expect("tools rendered");
    let tools_start = plain.find("# Tools").expect("tools rendered");
    assert!(
        common_prefix(&plain, &own) > tools_end,
        "a summary message of its own keeps the tool signatures cached"
    );
    assert!(
        common_prefix(&plain, &inside) <= tools_start,
        "a summary inside the system text comes before the tool signatures"
    );
}
