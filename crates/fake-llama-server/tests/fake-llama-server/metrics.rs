//! `GET /metrics` (`metrics`): off by default with the real server's 501, and with
//! `server.metrics` the real metric set counting what the fake processed.

use crate::common::{Server, metric as value};
use serde_json::json;

#[test]
fn metrics_are_refused_unless_the_script_turns_them_on() {
    let off = Server::fake("");
    let r = off.get("/metrics");
    assert_eq!(r.status, 501);
    assert_eq!(
        r.json(),
        json!({"error": {"code": 501, "type": "not_supported_error",
            "message": "This server does not support metrics endpoint. Start it with `--metrics`"}})
    );
}

#[test]
fn metrics_count_prompt_cached_and_generated_tokens() {
    let on = Server::fake("[server]\nmetrics = true\n");
    let r = on.get("/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4"));
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(value(&text, "prompt_tokens_total"), 0.0);
    let request = json!({ "messages": [{ "role": "user", "content": "hello there" }] });
    let first = on.chat(&request).json();
    let again = on.chat(&request).json();
    let text = String::from_utf8_lossy(&on.get("/metrics").body).into_owned();
    let sum = |key: &str| {
        (first["timings"][key].as_u64().expect("count")
            + again["timings"][key].as_u64().expect("count")) as f64
    };
    assert_eq!(value(&text, "prompt_tokens_total"), sum("prompt_n"));
    assert_eq!(value(&text, "prompt_tokens_cached_total"), sum("cache_n"));
    assert_eq!(value(&text, "tokens_predicted_total"), sum("predicted_n"));
    assert_eq!(value(&text, "requests_processing"), 0.0);
    assert_eq!(text.matches("# TYPE llamacpp:").count(), 15);
}
