//! Attested context: the canonical form of a message and its digest, the witnessable-request
//! check (each field it refuses), completion ids, and the assembled answer's replay digest.

use proto::attest::{
    self, Answer, ChatMessage, CompletionId, Unwitnessable, WITNESSABLE_FIELDS, witnessable,
};
use proto::{Hash32, ToolCall};
use serde_json::{Value, json};

fn call(id: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: args.into(),
    }
}

/// A request as loopd sends it, with `extra` merged in at the top.
fn request(messages: Vec<ChatMessage>, extra: Value) -> Vec<u8> {
    let mut body = json!({
        "messages": messages.iter().map(ChatMessage::to_value).collect::<Vec<_>>(),
        "tools": attest::definitions(),
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 256,
        "id_slot": 0,
        "cache_prompt": true,
    });
    if let (Some(b), Value::Object(more)) = (body.as_object_mut(), extra) {
        b.extend(more);
    }
    serde_json::to_vec(&body).expect("body")
}

fn honest() -> Vec<ChatMessage> {
    vec![ChatMessage::system("sys"), ChatMessage::user("hi")]
}

#[test]
fn canonical_bytes_sort_keys_at_every_level_and_drop_whitespace() {
    let c = call("x1", "{\"path\": \"/n\"}");
    let m = ChatMessage::assistant(None, Some("think".into()), &[&c]);
    assert_eq!(
        String::from_utf8(m.canonical()).expect("utf-8"),
        r#"{"content":null,"reasoning_content":"think","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\": \"/n\"}","name":"read_file"},"id":"x1","type":"function"}]}"#
    );
    assert_eq!(m.digest(), Hash32::digest(&m.canonical()));
    // Whitespace, key order and escapes of what arrives do not change the digest.
    let sent = br#" { "tool_calls" : [ {"type":"function","id":"x1","function":{"name":"read_file","arguments":"{\"path\": \"\/n\"}"}} ],
        "role":"assistant", "reasoning_content":"th\u0069nk", "content": null } "#;
    let parsed: ChatMessage = serde_json::from_slice(sent).expect("parse");
    assert_eq!(parsed.digest(), m.digest());
    // A tool message and a user message.
    assert_eq!(
        ChatMessage::tool("x1", "a\"b").canonical(),
        br#"{"content":"a\"b","role":"tool","tool_call_id":"x1"}"#
    );
    assert_eq!(
        ChatMessage::user("hi").canonical(),
        br#"{"content":"hi","role":"user"}"#
    );
}

#[test]
fn an_honest_request_is_witnessed_with_each_message_digest() {
    let messages = honest();
    let digests = witnessable(&request(messages.clone(), json!({}))).expect("witnessable");
    let want: Vec<Hash32> = messages.iter().map(ChatMessage::digest).collect();
    assert_eq!(digests, want);
    // The summary's request adds tool_choice none; sampling numbers are on the list.
    let extra = json!({"tool_choice": "none", "temperature": 0.7, "top_p": 0.9, "top_k": 40,
        "min_p": 0.05, "seed": 1, "repeat_penalty": 1.1, "presence_penalty": 0.0,
        "frequency_penalty": 0.0});
    assert!(witnessable(&request(honest(), extra)).is_ok());
    assert_eq!(WITNESSABLE_FIELDS.len(), 16);
}

#[test]
fn each_forcing_field_an_unknown_field_and_a_prefill_are_refused() {
    for field in [
        "grammar",
        "json_schema",
        "response_format",
        "logit_bias",
        "chat_template",
        "chat_template_kwargs",
        "n_probs",
        "whatever",
    ] {
        let got = witnessable(&request(honest(), json!({ field: {"type": "object"} })));
        assert_eq!(got, Err(Unwitnessable::Field(field.into())), "{field}");
        assert!(got.expect_err(field).to_string().contains(field));
    }
    for choice in [
        json!("required"),
        json!({"type": "function", "function": {"name": "read_file"}}),
    ] {
        let got = witnessable(&request(honest(), json!({ "tool_choice": choice })));
        assert!(matches!(got, Err(Unwitnessable::Shape(_))), "{got:?}");
    }
    let got = witnessable(&request(honest(), json!({"stream": false})));
    assert_eq!(got, Err(Unwitnessable::NotStreamed));
    let got = witnessable(&request(honest(), json!({"tools": []})));
    assert_eq!(got, Err(Unwitnessable::Tools));
    let mut other = attest::definitions();
    other[0]["function"]["description"] = json!("Read anything.");
    let got = witnessable(&request(honest(), json!({ "tools": other })));
    assert_eq!(got, Err(Unwitnessable::Tools));
    let mut prefill = honest();
    prefill.push(ChatMessage::assistant(Some("{\"path\":".into()), None, &[]));
    assert_eq!(
        witnessable(&request(prefill, json!({}))),
        Err(Unwitnessable::Prefill)
    );
    assert_eq!(
        witnessable(&request(vec![], json!({}))),
        Err(Unwitnessable::NoMessages)
    );
    assert_eq!(witnessable(b"[1]"), Err(Unwitnessable::NotAnObject));
    // A request's fields in order as an array (serde's derived parse would take it).
    let top: Value = serde_json::from_slice(&request(honest(), json!({}))).expect("json");
    let fields = ["messages", "tools", "stream"].map(|k| top[k].clone());
    let array = serde_json::to_vec(&fields).expect("array");
    assert_eq!(witnessable(&array), Err(Unwitnessable::NotAnObject));
    assert_eq!(
        witnessable(b"{\"messages\":"),
        Err(Unwitnessable::NotAnObject)
    );
}

#[test]
fn a_message_out_of_canonical_shape_and_a_field_given_twice_are_refused() {
    let body = |messages: Value| {
        let mut b: Value = serde_json::from_slice(&request(vec![], json!({}))).expect("json");
        b["messages"] = messages;
        serde_json::to_vec(&b).expect("body")
    };
    for bad in [
        json!([{"role": "user", "content": "hi", "name": "owner"}]),
        json!([{"role": "developer", "content": "hi"}]),
        json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
        // A message's fields in order as an array.
        json!([["user", "hi"]]),
        json!([{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "custom",
            "function": {"name": "x", "arguments": "{}"}}]}, {"role": "user", "content": "x"}]),
    ] {
        let got = witnessable(&body(bad.clone()));
        assert!(
            matches!(got, Err(Unwitnessable::Shape(_))),
            "{bad}: {got:?}"
        );
    }
    let got = witnessable(&body(
        json!([{"role": "user", "content": "a", "tool_call_id": "x"}]),
    ));
    assert_eq!(
        got,
        Err(Unwitnessable::Message {
            index: 0,
            key: "tool_call_id"
        })
    );
    let got = witnessable(&body(json!([{"role": "tool", "content": "a"}])));
    assert_eq!(
        got,
        Err(Unwitnessable::Message {
            index: 0,
            key: "tool_call_id"
        })
    );
    let got = witnessable(&body(
        json!([{"role": "user", "content": "a", "tool_calls": []}]),
    ));
    assert_eq!(
        got,
        Err(Unwitnessable::Message {
            index: 0,
            key: "tool_calls"
        })
    );
    let twice = br#"{"messages":[{"role":"user","content":"a"}],"stream":true,"messages":[]}"#;
    assert!(matches!(witnessable(twice), Err(Unwitnessable::Shape(d)) if d.contains("duplicate")));
}

#[test]
fn completion_ids_are_c_and_32_hex_digits() {
    let id = CompletionId::from_random([0xab; 16]);
    assert_eq!(id.as_str(), format!("c-{}", "ab".repeat(16)));
    assert_eq!(CompletionId::new(id.as_str()).expect("valid"), id);
    for bad in [
        "",
        "c-",
        "d-0123456789abcdef0123456789abcdef",
        "c-0123456789ABCDEF0123456789abcdef",
        "c-0123456789abcdef0123456789abcde",
        "c-0123456789abcdef0123456789abcdef0",
    ] {
        assert!(CompletionId::new(bad).is_err(), "{bad}");
        assert!(
            serde_json::from_value::<CompletionId>(json!(bad)).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn an_assembled_answer_replays_as_the_message_it_was_witnessed_as() {
    let mut a = Answer::default();
    let mut pieces = Vec::new();
    for data in [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"look"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"Zq","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"/n\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"timings":{"cache_n":1,"prompt_n":2,"predicted_n":3}}"#,
    ] {
        a.feed(data, |p| pieces.push(format!("{p:?}")))
            .expect("chunk");
    }
    assert_eq!(pieces, ["Reasoning(\"look\")"]);
    assert!(a.runnable());
    assert_eq!(a.tool_calls, [call("Zq", "{\"path\": \"/n\"}")]);
    let replay = ChatMessage::assistant(None, Some("look".into()), &[&a.tool_calls[0]]);
    assert_eq!(a.message().digest(), replay.digest());
    let mut cut = Answer::default();
    cut.feed(
        r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
        |_| {},
    )
    .expect("chunk");
    assert!(!cut.runnable());
    assert!(
        Answer::default()
            .feed("{\"error\":{\"code\":500}}", |_| {})
            .is_err()
    );
    assert!(Answer::default().feed("not json", |_| {}).is_err());
}

#[test]
fn the_tools_hash_is_that_of_the_definitions_in_canonical_form() {
    let defs = attest::definitions();
    assert_eq!(
        attest::tools_hash(),
        Hash32::digest(&attest::canonical::canonical_json(&defs))
    );
    let names: Vec<&str> = defs
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|d| d["function"]["name"].as_str())
        .collect();
    assert_eq!(names, proto::tools::TOOL_NAMES);
}
