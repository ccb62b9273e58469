//! The fake answers in the shapes of the real server's captured transcripts
//! (`tests/transcripts/`, copied from llama.cpp runs with SmolLM2): the same requests, the same
//! JSON structure back, for every endpoint and every kind of stream event.

use crate::common::{
    self, Event, Server, assert_same_shape, assert_streams_alike, transcript, transcript_events,
};
use serde_json::{Value, json};

const TOOLS_SCRIPT: &str = r#"
[server]
n_ctx = 4096
total_slots = 1

[[rule]]
name = "long"
match = { user_equals = "What is the weather in Berlin?" }
answer = { text = "The weather in Berlin is a mix of many things, and this answer is long enough to be cut by max_tokens at forty tokens, which is about one hundred and sixty bytes of text in the fake." }

[[rule]]
name = "call"
match = { user_contains = "Berlin" }
answer = { tool_calls = [{ name = "get_weather", arguments = '{"city": "Berlin", "unit": "celsius"}' }] }

[[rule]]
name = "after-result"
match = { tool_result_contains = "" }
answer = { text = "It is 18 degrees and sunny in Paris." }
"#;

const REASONING_SCRIPT: &str = r#"
[server]
reasoning = true

[default]
reasoning = "\n\nThe answer is 4."
text = ""
"#;

/// Sends a transcript's request to the fake and returns the response.
fn replay(server: &Server, name: &str) -> (Value, common::Response) {
    let t = transcript(name);
    let req = &t["request"];
    let method = req["method"].as_str().expect("method");
    let path = req["path"].as_str().expect("path");
    let response = match (method, &req["body"]) {
        ("GET", _) => server.get(path),
        (_, body) => server.post(path, body),
    };
    assert_eq!(
        response.status,
        200,
        "{name}: {}",
        String::from_utf8_lossy(&response.body)
    );
    (t, response)
}

fn assert_body_shape(server: &Server, name: &str) -> Value {
    let (t, response) = replay(server, name);
    let body = response.json();
    assert_same_shape(name, &t["response"]["body"], &body);
    assert_eq!(
        response.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(response.header("server"), Some("llama.cpp"));
    body
}

fn assert_stream_shape(server: &Server, name: &str) -> Vec<Event> {
    let (t, response) = replay(server, name);
    assert!(
        response.complete,
        "{name}: the chunked body must end properly"
    );
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.header("transfer-encoding"), Some("chunked"));
    assert_eq!(response.header("x-accel-buffering"), Some("no"));
    let fake = response.events();
    assert_streams_alike(name, &transcript_events(&t), &fake);
    fake
}

fn json_events(events: &[Event]) -> Vec<&Value> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Json(v) => Some(v),
            _ => None,
        })
        .collect()
}

#[test]
fn health_props_and_slots_have_the_real_shapes() {
    let fake = Server::fake(TOOLS_SCRIPT);
    assert_body_shape(&fake, "tools_01_get_health.json");
    let props = assert_body_shape(&fake, "tools_02_get_props.json");
    assert_eq!(props["default_generation_settings"]["n_ctx"], 4096);
    assert_eq!(props["total_slots"], 1);
    assert_body_shape(&fake, "tools_03_get_slots_idle.json");
    assert_body_shape(&fake, "tools_05_chat_toolcall_auto_nonstream.json");
    // After serving, a slot shows its last task, as in the real `/slots`.
    assert_body_shape(&fake, "tools_13_get_slots_after.json");
}

#[test]
fn a_tool_call_answer_has_the_real_shape_and_values() {
    let fake = Server::fake(TOOLS_SCRIPT);
    let body = assert_body_shape(&fake, "tools_05_chat_toolcall_auto_nonstream.json");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(
        call["function"]["arguments"],
        r#"{"city": "Berlin", "unit": "celsius"}"#
    );
    assert_eq!(call["id"].as_str().map(str::len), Some(32));
    let id = body["id"].as_str().expect("id");
    assert!(
        id.starts_with("chatcmpl-") && id.len() == "chatcmpl-".len() + 32,
        "{id}"
    );
    assert_eq!(body["object"], "chat.completion");
    let (usage, timings) = (&body["usage"], &body["timings"]);
    assert_eq!(
        usage["prompt_tokens"],
        timings["cache_n"].as_u64().expect("cache_n")
            + timings["prompt_n"].as_u64().expect("prompt_n")
    );
    assert_eq!(
        usage["prompt_tokens_details"]["cached_tokens"],
        timings["cache_n"]
    );
    assert_eq!(usage["completion_tokens"], timings["predicted_n"]);
}

#[test]
fn a_streamed_tool_call_with_include_usage_has_the_real_events() {
    let fake = Server::fake(TOOLS_SCRIPT);
    let events = assert_stream_shape(&fake, "tools_07_chat_toolcall_auto_stream.json");
    let events = json_events(&events);
    // The first tool-call delta carries index, id, type, name and the first argument bytes;
    // the others only argument fragments, which add up to the arguments.
    let mut arguments = String::new();
    for (i, e) in events
        .iter()
        .filter(|e| e["choices"][0]["delta"].get("tool_calls").is_some())
        .enumerate()
    {
        let call = &e["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["index"], 0);
        assert_eq!(call.get("id").is_some(), i == 0);
        assert_eq!(call["function"].get("name").is_some(), i == 0);
        arguments.push_str(call["function"]["arguments"].as_str().expect("fragment"));
    }
    assert_eq!(arguments, r#"{"city": "Berlin", "unit": "celsius"}"#);
    let finish = events[events.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert!(
        finish.get("timings").is_none(),
        "with include_usage the finish chunk has no timings"
    );
    let last = events[events.len() - 1];
    assert_eq!(last["choices"], json!([]));
    assert!(last.get("usage").is_some() && last.get("timings").is_some());
}

#[test]
fn a_stream_without_stream_options_puts_timings_on_the_finish_chunk() {
    let fake = Server::fake(TOOLS_SCRIPT);
    let events = assert_stream_shape(&fake, "tools_09_chat_toolcall_required_stream.json");
    assert_eq!(events.last(), Some(&Event::Done));
    let events = json_events(&events);
    let finish = events.last().expect("finish chunk");
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert!(finish.get("timings").is_some() && finish.get("usage").is_none());
}

#[test]
fn text_answers_have_the_real_shapes() {
    let fake = Server::fake(TOOLS_SCRIPT);
    let body = assert_body_shape(&fake, "tools_10_chat_after_tool_result_nonstream.json");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "It is 18 degrees and sunny in Paris."
    );
    let events = assert_stream_shape(&fake, "tools_11_chat_after_tool_result_stream.json");
    let text: String = json_events(&events)
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "It is 18 degrees and sunny in Paris.");
    let pieces = json_events(&events)
        .iter()
        .filter(|e| e["choices"][0]["delta"]["content"].is_string())
        .count();
    assert!(
        pieces > 3,
        "text is split into several deltas, got {pieces}"
    );
}

#[test]
fn max_tokens_cuts_a_text_answer_with_finish_reason_length() {
    let fake = Server::fake(TOOLS_SCRIPT);
    let body = assert_body_shape(&fake, "tools_12_chat_required_no_fewshot_nonstream.json");
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert_eq!(body["usage"]["completion_tokens"], 40);
}

#[test]
fn reasoning_answers_have_the_real_shapes() {
    let fake = Server::fake(REASONING_SCRIPT);
    let body = assert_body_shape(&fake, "reasoning_03_chat_reasoning_nonstream.json");
    assert_eq!(
        body["choices"][0]["message"]["reasoning_content"],
        "\n\nThe answer is 4."
    );
    assert_stream_shape(&fake, "reasoning_04_chat_reasoning_stream.json");
    assert_stream_shape(&fake, "reasoning_10_chat_tools_reasoning_stream.json");
    // Without reasoning in the script, no reasoning_content key at all.
    let plain = Server::fake(TOOLS_SCRIPT);
    let body = plain
        .chat(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .json();
    assert!(
        body["choices"][0]["message"]
            .get("reasoning_content")
            .is_none()
    );
}
