//! Scripted behaviour: loading, rules, errors, delays, malformed and truncated streams, the
//! connection handling and the command line.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{self, Conn, Event, Server};
use serde_json::{Value, json};

fn user(text: &str) -> Value {
    json!({ "messages": [{ "role": "user", "content": text }] })
}

fn streamed(text: &str) -> Value {
    let mut body = user(text);
    body["stream"] = json!(true);
    body
}

fn content(body: &Value) -> &str {
    body["choices"][0]["message"]["content"]
        .as_str()
        .expect("content")
}

#[test]
fn health_is_503_while_loading_then_200() {
    let fake = Server::fake("[server]\nloading_ms = 600\n");
    let loading = fake.get("/health");
    assert_eq!(loading.status, 503);
    assert_eq!(
        loading.json(),
        json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})
    );
    assert_eq!(
        fake.get("/props").status,
        503,
        "every endpoint waits for the model"
    );
    assert_eq!(fake.chat(&user("hi")).status, 503);
    let deadline = Instant::now() + Duration::from_secs(10);
    while fake.get("/health").status != 200 {
        assert!(Instant::now() < deadline, "still loading after 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(fake.get("/health").json(), json!({"status": "ok"}));
    // The control turns loading on and off again.
    let on = fake.post("/fake/loading", &json!({"loading": true}));
    assert_eq!(on.json(), json!({"loading": true}));
    assert_eq!(fake.get("/health").status, 503);
    fake.post("/fake/loading", &json!({"loading": null}));
    assert_eq!(fake.get("/health").status, 200);
}

#[test]
fn props_report_the_scripted_settings() {
    let fake = Server::fake(
        "[server]\nn_ctx = 2048\ntotal_slots = 3\nmodel = \"/m/x.gguf\"\nbuild_info = \"b1\"\n",
    );
    let props = fake.get("/props").json();
    assert_eq!(props["default_generation_settings"]["n_ctx"], 2048);
    assert_eq!(props["total_slots"], 3);
    assert_eq!(props["model_path"], "/m/x.gguf");
    assert_eq!(props["build_info"], "b1");
    assert!(
        props["chat_template"]
            .as_str()
            .is_some_and(|t| t.contains("<|im_start|>"))
    );
    assert_eq!(fake.get("/slots").json().as_array().map(Vec::len), Some(3));
    assert_eq!(fake.get("/v1/models").json()["data"][0]["id"], "/m/x.gguf");
    let body = fake.chat(&user("hi")).json();
    assert_eq!(
        (&body["model"], &body["system_fingerprint"]),
        (&json!("/m/x.gguf"), &json!("b1"))
    );
}

#[test]
fn rules_match_on_turn_user_text_tool_results_and_last_tool() {
    let fake = Server::fake(
        r#"
        [[rule]]
        match = { turn = 1, user_equals = "first" }
        answer = { text = "turn one" }
        [[rule]]
        max_uses = 1
        match = { user_contains = "once" }
        answer = { text = "only once" }
        [[rule]]
        match = { tool_result_contains = "42", last_tool = "calc" }
        answer = { text = "the answer is 42" }
        [default]
        text = "echo: {last_user}"
        "#,
    );
    assert_eq!(content(&fake.chat(&user("first")).json()), "turn one");
    assert_eq!(content(&fake.chat(&user("just once")).json()), "only once");
    assert_eq!(
        content(&fake.chat(&user("just once")).json()),
        "echo: just once"
    );
    let after_tool = json!({ "messages": [
        { "role": "user", "content": "compute" },
        { "role": "assistant", "content": null, "tool_calls": [
            { "id": "1", "type": "function", "function": { "name": "calc", "arguments": "{}" } }] },
        { "role": "tool", "tool_call_id": "1", "content": "result: 42" }
    ]});
    assert_eq!(content(&fake.chat(&after_tool).json()), "the answer is 42");
    let log = fake.get("/fake/requests").json();
    let rules: Vec<&str> = log
        .as_array()
        .expect("log")
        .iter()
        .filter_map(|e| e["rule"].as_str())
        .collect();
    assert_eq!(rules, ["rule 1", "rule 2", "default", "rule 3"]);
}

#[test]
fn scripted_and_protocol_errors_have_the_real_shape() {
    let fake = Server::fake(
        r#"
        [server]
        n_ctx = 64
        [[rule]]
        match = { user_contains = "boom" }
        answer = { error = { status = 500, message = "model crashed" } }
        [[rule]]
        match = { user_contains = "busy" }
        answer = { error = { status = 503, message = "Loading model", type = "unavailable_error" } }
        "#,
    );
    let boom = fake.chat(&user("boom"));
    assert_eq!(boom.status, 500);
    assert_eq!(
        boom.header("connection"),
        Some("close"),
        "errors close the connection"
    );
    assert_eq!(
        boom.json(),
        json!({"error": {"code": 500, "message": "model crashed", "type": "server_error"}})
    );
    assert_eq!(
        fake.chat(&streamed("busy")).json()["error"]["type"],
        "unavailable_error"
    );
    let bad_json = fake.post_raw("/v1/chat/completions", b"{not json");
    assert_eq!(bad_json.status, 400);
    assert_eq!(bad_json.json()["error"]["type"], "invalid_request_error");
    assert_eq!(
        fake.post("/v1/chat/completions", &json!({})).json()["error"]["message"],
        "'messages' is required"
    );
    let no_role = fake.post(
        "/v1/chat/completions",
        &json!({"messages": [{"content": "x"}]}),
    );
    assert_eq!(no_role.status, 500);
    let missing = fake.get("/nope");
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.json()["error"],
        json!({"code": 404, "message": "File Not Found", "type": "not_found_error"})
    );
    let too_long = fake.chat(&user(&"word ".repeat(100)));
    assert_eq!(too_long.status, 400);
    let error = &too_long.json()["error"];
    assert_eq!(error["type"], "exceed_context_size_error");
    assert_eq!(error["n_ctx"], 64);
    assert!(error["n_prompt_tokens"].as_u64() > Some(64));
}

#[test]
fn a_truncated_stream_stops_mid_body_without_done() {
    let fake = Server::fake(
        "[[rule]]\nanswer = { text = \"one two three four five six\", truncate_after = 3 }\n",
    );
    let response = fake.chat(&streamed("hi"));
    assert_eq!(response.status, 200);
    assert!(!response.complete, "the chunked body must not end properly");
    let events = response.events();
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| matches!(e, Event::Json(_))));
    let whole = fake.chat(&user("hi"));
    assert!(!whole.complete, "a non-streamed answer is cut short too");
    assert!(serde_json::from_slice::<Value>(&whole.body).is_err());
}

#[test]
fn a_malformed_stream_has_one_line_that_is_not_json() {
    let fake =
        Server::fake("[[rule]]\nanswer = { text = \"abcdefghijkl\", malformed_after = 2 }\n");
    let response = fake.chat(&streamed("hi"));
    assert!(response.complete);
    let events = response.events();
    assert!(matches!(events[2], Event::Garbage(_)), "{events:?}");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Garbage(_)))
            .count(),
        1
    );
    assert_eq!(events.last(), Some(&Event::Done));
    let whole = fake.chat(&user("hi"));
    assert!(whole.complete && serde_json::from_slice::<Value>(&whole.body).is_err());
}

#[test]
fn explicit_chunks_and_delays_shape_the_stream() {
    let fake = Server::fake(
        "[[rule]]\nanswer = { text = \"Hello, world\", chunks = [\"Hel\", \"lo, \", \"world\"], \
         delay_ms = 300, chunk_delay_ms = 50 }\n",
    );
    let started = Instant::now();
    let response = fake.chat(&streamed("hi"));
    assert!(started.elapsed() >= Duration::from_millis(300 + 4 * 50));
    let pieces: Vec<String> = response
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::Json(v) => v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(pieces, ["Hel", "lo, ", "world"]);
}

#[test]
fn connections_stay_open_across_requests_and_streams() {
    let fake = Server::fake("");
    let mut conn = Conn::open(fake.addr);
    let first = conn.send("GET", "/health", None);
    assert_eq!(first.header("keep-alive"), Some("timeout=5, max=100"));
    let stream = conn.send(
        "POST",
        "/v1/chat/completions",
        Some(streamed("hi").to_string().as_bytes()),
    );
    assert!(stream.complete);
    assert_eq!(stream.events().last(), Some(&Event::Done));
    let body = conn.send(
        "POST",
        "/v1/chat/completions",
        Some(user("hi").to_string().as_bytes()),
    );
    assert!(content(&body.json()).contains("No rule matched"));
}

#[test]
fn the_command_line_checks_scripts_and_refuses_other_addresses() {
    let bin = env!("CARGO_BIN_EXE_fake-llama-server");
    let dir = common::TempDir::new("cli");
    let good = dir.0.join("good.toml");
    std::fs::write(&good, "[[rule]]\nanswer = { text = \"x\" }\n").expect("write");
    let out = Command::new(bin)
        .arg("--script")
        .arg(&good)
        .arg("--check")
        .output()
        .expect("run");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "script ok: 1 rule(s)\n"
    );
    let bad = dir.0.join("bad.toml");
    std::fs::write(&bad, "[[rule]]\nanswer = { txt = \"x\" }\n").expect("write");
    let out = Command::new(bin)
        .arg("--script")
        .arg(&bad)
        .arg("--check")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown field `txt`"));
    let out = Command::new(bin)
        .args(["--listen", "0.0.0.0:0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopback"));
}
