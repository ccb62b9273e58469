//! A pinned MCP tool through the whole stack: loopd offers what brokerd says (boxmaker's
//! tools and the pinned ones), inferproxy witnesses against brokerd's hash, so a request
//! offering other tools (proto's alone, once a server is pinned) is refused, and the
//! model's call of the pinned tool runs and comes back to it.

use proto::ToolResponse;
use proto::chat::TurnEnd;
use serde_json::json;
use stack::mcp::mcp_grant;
use stack::{Home, chat_body};

const SCRIPT: &str = r#"
[server]
n_ctx = 16384
total_slots = 2

[[rule]]
[rule.match]
tool_result_contains = "echoed"
[rule.answer]
text = "The server echoed."

[[rule]]
[rule.match]
user_contains = "echo"
[[rule.answer.tool_calls]]
name = "mcp__fake__echo"
arguments = '{"text":"echoed"}'

[default]
text = "Hello."
"#;

#[test]
fn the_model_is_offered_the_pinned_tools_and_its_call_runs_through_the_stack() {
    let home = Home::new("mcp-agent", "");
    home.mcp_server(
        "fake",
        json!({"tools": [{"name": "echo", "description": "Echoes its text",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "result": {"content": ["echo_arguments"]}}]}),
    );
    home.write_grant("echo", &mcp_grant("mcp:fake/echo", ""));
    let agent = home.start_agent(SCRIPT, "");
    let t0 = agent.chat(None, "hello");
    assert_eq!(t0.reply.text, "Hello.");
    let first = agent.requests();
    let offered_before = first
        .as_array()
        .and_then(|r| r.last())
        .map(ToString::to_string)
        .expect("a request");
    assert!(
        !offered_before.contains("mcp__fake__echo"),
        "not pinned yet"
    );

    home.mcp_pinned("fake");
    let t1 = agent.chat(None, "please echo");
    assert_eq!(t1.reply.end, TurnEnd::Answered, "{:?}", t1.events);
    assert_eq!(t1.reply.text, "The server echoed.");
    assert!(t1.events.iter().any(|e| matches!(
        e,
        proto::chat::ChatEvent::ToolResponse {
            response: ToolResponse::Result { .. },
            ..
        }
    )));
    // The request as the model's server rendered it offered the pinned tool.
    let requests = agent.requests();
    let last = requests
        .as_array()
        .and_then(|r| r.last())
        .map(ToString::to_string)
        .expect("a request");
    assert!(last.contains("mcp__fake__echo"), "{last}");
    assert!(last.contains("Echoes its text"), "{last}");

    // A request offering only boxmaker's tools is no longer what brokerd offers: refused
    // before it reaches the model.
    let body = chat_body(&[proto::attest::ChatMessage::user("hi")], json!({}));
    let sock = home.root.join("run/loop-infer/infer.sock");
    let stream = std::os::unix::net::UnixStream::connect(sock).expect("infer.sock");
    let bytes = serde_json::to_vec(&body).expect("body");
    let resp =
        strict_http::request(stream, "POST", "/v1/chat/completions", &[], &bytes).expect("request");
    assert_eq!(resp.status, 400);
}
