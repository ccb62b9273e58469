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
fn text_replies_are_cut_to_max_tokens_and_tool_calls_never() {
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
    let call = ToolCallSpec {
        name: "f".into(),
        arguments: "{\"a\": 1}".into(),
        id: None,
    };
    let answer = Answer {
        tool_calls: vec![call],
        ..Answer::default()
    };
    let tools = Reply::from_answer(&answer, &[], Some(1), &mut ids());
    assert_eq!(tools.finish_reason, "tool_calls");
    assert_eq!(tools.tool_calls[0].0, "id1");
}

#[test]
fn completion_has_reasoning_and_tool_calls_only_when_present() {
    let mut reply = Reply {
        content: "hi".into(),
        chunks: vec![],
        reasoning: String::new(),
        tool_calls: vec![],
        finish_reason: "stop".into(),
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
