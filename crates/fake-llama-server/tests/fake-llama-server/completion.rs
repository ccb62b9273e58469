//! Completions and stream events built from a reply (`completion`).

use fake_llama_server::completion::{Counts, Meta, Reply, completion, stream_events};
use fake_llama_server::render::{Call, Msg};
use fake_llama_server::script::{Answer, ToolCallSpec};
use serde_json::json;

fn meta() -> Meta {
    Meta {
        id: "chatcmpl-x".into(),
        created: 1,
        model: "m".into(),
        fingerprint: "b".into(),
    }
}

fn counts() -> Counts {
    Counts {
        prompt_tokens: 10,
        cache_n: 9,
        prompt_n: 1,
        predicted_n: 3,
    }
}

fn ids() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("id{n}")
    }
}

#[test]
fn text_replies_are_cut_to_max_tokens() {
    let answer = Answer {
        text: Some("Hello {last_user}!".into()),
        ..Answer::default()
    };
    let user = Msg {
        role: "user".into(),
        content: "Bob".into(),
        ..Msg::default()
    };
    let full = Reply::from_answer(&answer, std::slice::from_ref(&user), None, &mut ids());
    assert_eq!(
        (full.content.as_str(), full.finish_reason.as_str()),
        ("Hello Bob!", "stop")
    );
    let cut = Reply::from_answer(&answer, &[user], Some(1), &mut ids());
    assert_eq!(
        (cut.content.as_str(), cut.finish_reason.as_str()),
        ("Hell", "length")
    );
}

fn calls(specs: &[(&str, &str)], text: &str) -> Answer {
    Answer {
        text: (!text.is_empty()).then(|| text.to_owned()),
        tool_calls: specs
            .iter()
            .map(|(name, arguments)| ToolCallSpec {
                name: (*name).into(),
                arguments: (*arguments).into(),
                id: None,
            })
            .collect(),
        ..Answer::default()
    }
}

#[test]
fn a_tool_call_is_cut_mid_arguments_as_the_real_server_cuts_it() {
    let answer = calls(&[("list_dir", "{\"path\": \"/home/owner/notes\"}")], "");
    // The body: `<tool_call>\n{"name": "list_dir", "arguments": ` is 46 bytes; 15 tokens
    // (60 bytes) leave 14 bytes of the arguments.
    let cut = Reply::from_answer(&answer, &[], Some(15), &mut ids());
    assert_eq!(cut.finish_reason, "length");
    assert_eq!(cut.tool_calls.len(), 1);
    assert_eq!(cut.tool_calls[0].0, "id1");
    assert_eq!(cut.tool_calls[0].1.name, "list_dir");
    assert_eq!(cut.tool_calls[0].1.arguments, "{\"path\": \"/hom");
    // What the slot holds is the generated text up to the cut, not a whole call.
    assert_eq!(
        cut.generated(),
        "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \"/hom"
    );
    // A call that fits is whole and the reply ends normally.
    let whole = Reply::from_answer(&answer, &[], Some(100), &mut ids());
    assert_eq!(whole.finish_reason, "tool_calls");
    assert_eq!(
        whole.tool_calls[0].1.arguments,
        "{\"path\": \"/home/owner/notes\"}"
    );
    assert_eq!(
        whole.generated(),
        "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \"/home/owner/notes\"}}\n</tool_call>"
    );
}

#[test]
fn a_cut_keeps_whole_calls_before_it_and_drops_calls_not_begun() {
    let answer = calls(&[("f", "{\"a\": 1}"), ("g", "{\"b\": 2}")], "Ok.");
    // Cut one token into g's arguments.
    let body = Reply::from_answer(&answer, &[], None, &mut ids()).generated();
    let g_args = body.rfind("{\"b\"").expect("g's arguments");
    let cut = Reply::from_answer(&answer, &[], Some(g_args / 4 + 1), &mut ids());
    assert_eq!(cut.finish_reason, "length");
    assert_eq!(cut.content, "Ok.");
    assert_eq!(cut.tool_calls.len(), 2);
    assert_eq!(cut.tool_calls[0].1.arguments, "{\"a\": 1}");
    assert!(
        "{\"b\": 2}".starts_with(&cut.tool_calls[1].1.arguments)
            && cut.tool_calls[1].1.arguments.len() < 8,
        "{:?}",
        cut.tool_calls
    );
    // Cut in the second call's head: it is dropped.
    let head = body.rfind("<tool_call>").expect("g's head");
    let cut = Reply::from_answer(&answer, &[], Some(head / 4 + 1), &mut ids());
    assert_eq!(cut.tool_calls.len(), 1);
    // Cut in the text: no call at all.
    let cut = Reply::from_answer(
        &calls(&[("f", "{}")], "Hello there"),
        &[],
        Some(2),
        &mut ids(),
    );
    assert_eq!(
        (cut.content.as_str(), cut.tool_calls.len()),
        ("Hello th", 0)
    );
    assert_eq!(cut.finish_reason, "length");
}

#[test]
fn completion_has_reasoning_and_tool_calls_only_when_present() {
    let mut reply = Reply {
        content: "hi".into(),
        chunks: vec![],
        reasoning: String::new(),
        tool_calls: vec![],
        finish_reason: "stop".into(),
        cut_body: None,
    };
    let plain = completion(&meta(), &reply, counts());
    let message = &plain["choices"][0]["message"];
    assert!(message.get("reasoning_content").is_none() && message.get("tool_calls").is_none());
    assert_eq!(plain["usage"]["prompt_tokens_details"]["cached_tokens"], 9);
    assert!(plain["timings"]["prompt_ms"].is_f64());
    reply.reasoning = "think".into();
    reply.tool_calls = vec![(
        "c1".into(),
        Call {
            name: "f".into(),
            arguments: "{}".into(),
        },
    )];
    let full = completion(&meta(), &reply, counts());
    let call = &full["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["arguments"], "{}");
    assert_eq!(full["choices"][0]["message"]["reasoning_content"], "think");
}

#[test]
fn stream_puts_timings_on_the_finish_chunk_or_on_a_usage_chunk() {
    let reply = Reply {
        content: "abcdefgh".into(),
        chunks: vec![],
        reasoning: String::new(),
        tool_calls: vec![(
            "c1".into(),
            Call {
                name: "f".into(),
                arguments: "{\"k\":1}".into(),
            },
        )],
        finish_reason: "tool_calls".into(),
        cut_body: None,
    };
    let plain = stream_events(&meta(), &reply, counts(), false, 4);
    // role, 2 content pieces, first call delta + 1 fragment, finish
    assert_eq!(plain.len(), 6);
    assert_eq!(plain[3]["choices"][0]["delta"]["tool_calls"][0]["id"], "c1");
    assert_eq!(
        plain[3]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
        "{\"k\""
    );
    assert!(
        plain[4]["choices"][0]["delta"]["tool_calls"][0]
            .get("id")
            .is_none()
    );
    assert!(plain[5].get("timings").is_some() && plain[5].get("usage").is_none());
    let with_usage = stream_events(&meta(), &reply, counts(), true, 4);
    assert_eq!(with_usage.len(), 7);
    assert!(with_usage[5].get("timings").is_none());
    assert_eq!(with_usage[6]["choices"], json!([]));
    assert!(with_usage[6].get("usage").is_some() && with_usage[6].get("timings").is_some());
}
