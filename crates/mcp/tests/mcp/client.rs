//! The client against the scripted fake: the handshake, pages, calls, refusals and limits.

use std::time::{Duration, Instant};

use mcp::{ClientInfo, Declared, Limits, McpError, ServerRequest};
use serde_json::json;

use crate::{fake, fake_with};

const TOOLS: &str = r#"{
  "server_info": {"name": "fake", "version": "2.0"},
  "page_size": 2,
  "tools": [
    {"name": "echo", "description": "Echoes its arguments",
     "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
     "result": {"content": [{"echo_arguments": null}]}},
    {"name": "fail", "result": {"content": [{"text": "it broke"}], "is_error": true}},
    {"name": "mixed", "result": {"content": [
        {"text": "first"}, {"image": "image/png"}, {"audio": "audio/wav; evil=1 2"},
        {"resource_link": "demo://resource/1"}, {"resource": ["demo://r/2", "secret text"]},
        {"text": "last"}]}},
    {"name": "ask", "steps": [{"notify": "notifications/message"}, {"ask": "sampling/createMessage"}],
     "result": {"content": [{"text": "never"}]}},
    {"name": "asks", "steps": [{"ask": "elicitation/create"}], "result": {"content": [{"text": "never"}]}},
    {"name": "rpc", "result": {"error": [-32000, "the server's own words"]}}
  ]
}"#;

fn init(client: &mut crate::FakeClient) -> mcp::ServerInfo {
    client
        .initialize(&ClientInfo::default(), Declared::default())
        .expect("initialize")
}

#[test]
fn initialize_lists_every_page_and_calls() {
    let (mut client, server) = fake(TOOLS);
    let info = init(&mut client);
    assert_eq!((info.name.as_str(), info.version.as_str()), ("fake", "2.0"));
    assert_eq!(info.protocol_version, mcp::PROTOCOL_VERSION);
    let tools = client.list_tools().expect("list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["echo", "fail", "mixed", "ask", "asks", "rpc"],
        "three pages of two"
    );
    assert_eq!(
        tools[0].description.as_deref(),
        Some("Echoes its arguments")
    );
    let result = client
        .call_tool("echo", &json!({"x": "ü\n"}))
        .expect("call");
    assert_eq!(result.text, r#"{"x":"ü\n"}"#);
    assert!(!result.is_error);
    let result = client.call_tool("fail", &json!({})).expect("call");
    assert_eq!((result.text.as_str(), result.is_error), ("it broke", true));
    assert!(client.report().refused.is_empty());
    drop(client);
    assert_eq!(server.join().expect("fake"), 0);
}

#[test]
fn only_text_is_passed_on_the_rest_is_described() {
    let (mut client, _server) = fake(TOOLS);
    init(&mut client);
    let result = client.call_tool("mixed", &json!({})).expect("call");
    assert_eq!(
        result.text,
        "first\n[image content, image/png, 70 bytes: not shown]\n[audio content, 70 bytes: not \
         shown]\n[resource link <demo://resource/1>, text/plain: not followed]\n[embedded \
         resource <demo://r/2>, text/plain, 11 bytes of text: not shown]\nlast"
    );
    assert_eq!(result.described, 4);
    assert!(!result.text.contains("secret text") && !result.text.contains("iVBOR"));
}

#[test]
fn server_requests_are_refused_and_reported() {
    let (mut client, _server) = fake(TOOLS);
    init(&mut client);
    // server-everything's way: the refusal comes back as an isError result.
    let result = client.call_tool("ask", &json!({})).expect("call");
    assert!(result.is_error);
    assert!(
        result
            .text
            .starts_with("MCP error -32601: boxmaker does not answer sampling/createMessage"),
        "{}",
        result.text
    );
    let result = client.call_tool("asks", &json!({})).expect("call");
    assert!(
        result.is_error && result.text.contains("elicitation/create"),
        "{}",
        result.text
    );
    assert_eq!(
        client.report().refused,
        [ServerRequest::Sampling, ServerRequest::Elicitation]
    );
    assert_eq!(client.report().notifications, 1);
}

#[test]
fn requests_at_initialized_are_refused_and_too_many_end_the_session() {
    let script = r#"{"on_initialized": [{"ask": "roots/list"}, {"ask": "ping"}, {"ask": "x/y"}],
        "tools": [{"name": "t"}]}"#;
    let (mut client, _server) = fake(script);
    init(&mut client);
    client.list_tools().expect("list");
    assert_eq!(
        client.report().refused,
        [
            ServerRequest::Roots,
            ServerRequest::Ping,
            ServerRequest::Other {
                method: "x/y".into()
            }
        ]
    );
    let limits = Limits {
        max_requests: 2,
        ..Limits::default()
    };
    let (mut client, _server) = fake_with(script, limits, Duration::from_secs(10));
    init(&mut client);
    assert_eq!(
        client.list_tools(),
        Err(McpError::TooManyRequests { limit: 2 })
    );
}

#[test]
fn a_json_rpc_error_is_the_servers_words_cut() {
    let (mut client, _server) = fake(TOOLS);
    init(&mut client);
    let err = client.call_tool("rpc", &json!({})).expect_err("error");
    assert_eq!(
        err.to_string(),
        "the MCP server answered tools/call with error -32000: the server's own words"
    );
    let err = client.call_tool("nosuch", &json!({})).expect_err("unknown");
    assert!(
        matches!(err, McpError::Server { code: -32602, .. }),
        "{err}"
    );
}

#[test]
fn another_protocol_version_is_refused() {
    let (mut client, _server) = fake(r#"{"protocol_version": "2024-11-05", "tools": []}"#);
    let err = client
        .initialize(&ClientInfo::default(), Declared::default())
        .expect_err("version");
    assert_eq!(
        err,
        McpError::Version {
            offered: "2024-11-05".into()
        }
    );
}

#[test]
fn a_message_over_the_limit_is_not_read() {
    let script =
        r#"{"tools": [{"name": "big", "result": {"content": [{"repeat": ["x", 70000]}]}}]}"#;
    let limits = Limits {
        max_message: 64 * 1024,
        ..Limits::default()
    };
    let (mut client, _server) = fake_with(script, limits, Duration::from_secs(10));
    init(&mut client);
    assert_eq!(
        client.call_tool("big", &json!({})),
        Err(McpError::MessageTooLarge { limit: 65536 })
    );
    // The session is over: nothing more is read.
    assert!(matches!(
        client.list_tools(),
        Err(McpError::MessageTooLarge { .. })
    ));
}

#[test]
fn everything_the_server_sends_together_is_bounded() {
    let script = r#"{"tools": [{"name": "chatty",
        "steps": [{"notify": "notifications/message"}, {"notify": "notifications/message"},
                  {"notify": "notifications/message"}, {"notify": "notifications/message"}],
        "result": {"content": [{"text": "done"}]}}]}"#;
    let limits = Limits {
        max_output: 400,
        ..Limits::default()
    };
    let (mut client, _server) = fake_with(script, limits, Duration::from_secs(10));
    init(&mut client);
    assert_eq!(
        client.call_tool("chatty", &json!({})),
        Err(McpError::OutputTooLarge { limit: 400 })
    );
}

#[test]
fn a_slow_server_times_out_at_the_sessions_deadline() {
    let script = r#"{"tools": [{"name": "slow", "steps": [{"sleep_ms": 3000}], "result": {"content": [{"text": "late"}]}}]}"#;
    let (mut client, _server) = fake_with(script, Limits::default(), Duration::from_millis(700));
    init(&mut client);
    let started = Instant::now();
    let err = client.call_tool("slow", &json!({})).expect_err("timeout");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err.to_string(),
        "the MCP server gave no tools/call in time (timed out after 700 ms)"
    );
}

#[test]
fn broken_servers_are_typed_errors() {
    for (step, want) in [
        (r#"{"raw": "this is not json"}"#, "not JSON"),
        (
            r#"{"raw": "{\"jsonrpc\":\"2.0\",\"id\":2,\"id\":2,\"result\":{}}"}"#,
            "duplicate key",
        ),
        (
            r#"{"raw": "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}"}"#,
            "request 99, which the client did not make",
        ),
        (r#"{"raw": "[]"}"#, "batches"),
        (
            r#"{"exit": 3}"#,
            "closed its output while tools/call was due",
        ),
    ] {
        let script = format!(
            r#"{{"tools": [{{"name": "t", "steps": [{step}], "result": {{"content": [{{"text": "ok"}}]}}}}]}}"#
        );
        let (mut client, _server) = fake(&script);
        init(&mut client);
        let err = client.call_tool("t", &json!({})).expect_err(step);
        assert!(err.to_string().contains(want), "{step}: {err}");
    }
}

#[test]
fn too_many_tools_or_pages_are_refused() {
    let tools: Vec<String> = (0..5).map(|i| format!(r#"{{"name": "t{i}"}}"#)).collect();
    let script = format!(r#"{{"page_size": 1, "tools": [{}]}}"#, tools.join(","));
    let limits = Limits {
        max_tools: 4,
        ..Limits::default()
    };
    let (mut client, _server) = fake_with(&script, limits, Duration::from_secs(10));
    init(&mut client);
    assert_eq!(
        client.list_tools(),
        Err(McpError::TooManyTools { limit: 4 })
    );
    let limits = Limits {
        max_pages: 3,
        ..Limits::default()
    };
    let (mut client, _server) = fake_with(&script, limits, Duration::from_secs(10));
    init(&mut client);
    assert_eq!(
        client.list_tools(),
        Err(McpError::TooManyPages { limit: 3 })
    );
}

#[test]
fn a_server_without_the_tools_capability_has_no_tools_and_is_not_asked() {
    let (mut client, _server) = fake(r#"{"no_tools_capability": true, "tools": [{"name": "t"}]}"#);
    let info = init(&mut client);
    assert!(!info.tools);
    assert_eq!(client.list_tools(), Ok(Vec::new()));
}
