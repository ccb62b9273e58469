//! Chat request bodies (`request`): what the fake reads, what it refuses.

use fake_llama_server::request::ChatRequest;

#[test]
fn reads_what_the_fake_needs_and_ignores_the_rest() {
    let body = br#"{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
        {"role":"assistant","content":null,"reasoning_content":"r","tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":{"k":1}}}]}],
        "stream":true,"stream_options":{"include_usage":true},"id_slot":1,"max_tokens":5,
        "cache_prompt":false,"temperature":0,"whatever":{"x":1}}"#;
    let (req, _) = ChatRequest::parse(body).expect("valid request");
    assert_eq!(req.messages[0].content, "ab");
    assert_eq!(req.messages[1].reasoning, "r");
    assert_eq!(req.messages[1].tool_calls[0].arguments, "{\"k\":1}");
    assert!(req.stream && req.include_usage && !req.cache_prompt);
    assert_eq!((req.id_slot, req.max_tokens), (Some(1), Some(5)));
    let (req, _) =
        ChatRequest::parse(br#"{"messages":[{"role":"user","content":"x"}],"id_slot":-1}"#)
            .expect("valid request");
    assert_eq!(req.id_slot, None);
    assert!(req.cache_prompt);
}

#[test]
fn refuses_bad_bodies_with_400() {
    for body in [&b"{not json"[..], b"[]", b"{}", br#"{"messages":{}}"#] {
        let err = ChatRequest::parse(body).expect_err("must be refused");
        assert_eq!(err.status, 400, "{}", String::from_utf8_lossy(body));
    }
    let err = ChatRequest::parse(br#"{"messages":[{"content":"x"}]}"#).expect_err("no role");
    assert_eq!((err.status, err.kind.as_str()), (500, "server_error"));
}

#[test]
fn a_history_whose_tool_call_arguments_are_not_json_is_refused_like_the_real_server() {
    let body = br#"{"messages":[{"role":"user","content":"ls"},
        {"role":"assistant","content":"","tool_calls":[{"id":"x","type":"function","function":{"name":"list_dir","arguments":"{\"path\": \"/home/owner/no"}}]},
        {"role":"user","content":"again"}]}"#;
    let err = ChatRequest::parse(body).expect_err("not renderable");
    assert_eq!((err.status, err.kind.as_str()), (500, "server_error"));
    assert_eq!(
        err.message,
        "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse \
         error at line 1, column 25: syntax error while parsing value - invalid string: \
         missing closing quote; last read: '\"/home/owner/no'"
    );
    // A call without arguments is refused too, as the real server refuses it.
    let err = ChatRequest::parse(
        br#"{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}]}"#,
    )
    .expect_err("no arguments");
    assert_eq!(
        (err.status, err.message.as_str()),
        (
            500,
            "Failed to parse messages: [json.exception.out_of_range.403] key 'arguments' not found"
        )
    );
}
