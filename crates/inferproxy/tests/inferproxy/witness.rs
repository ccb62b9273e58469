//! inferproxy is the witness: a request that could force the model is refused and never
//! forwarded; every answer it forwards is reported (prompt digests, answer digest, the tool
//! calls as the model emitted them) before loopd gets `[DONE]`, and without brokerd's
//! acknowledgement the stream ends without it.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use proto::ToolCall;
use proto::attest::{COMPLETION_HEADER, ChatMessage, CompletionId};
use serde_json::json;
use strict_http::SseReader;

use crate::support::{
    Ack, Gate, PATIENCE, Proxy, STREAM_HEAD, TempDir, Upstream, chat_body, chat_body_with, chunk,
};

/// A tool call as real llama-server streams it (reference tools/07: id and name first,
/// then the arguments a few bytes a delta), the finish, the usage chunk, `[DONE]`.
fn tool_call_events(finish: &str) -> Vec<String> {
    let delta = |d: &str, finish: &str| {
        format!(
            "data: {{\"choices\":[{{\"finish_reason\":{finish},\"index\":0,\"delta\":{d}}}],\
             \"created\":1796002655,\"id\":\"chatcmpl-4lrV\",\"model\":\"SmolLM2\",\
             \"system_fingerprint\":\"b0-unknown\",\"object\":\"chat.completion.chunk\"}}\n\n"
        )
    };
    let mut out = vec![delta(r#"{"role":"assistant","content":null}"#, "null")];
    out.push(delta(
        r#"{"tool_calls":[{"index":0,"id":"xffiZ","type":"function","function":{"name":"read_file","arguments":"{"}}]}"#,
        "null",
    ));
    for piece in [r#"\""#, "path", r#"\":"#, r#" \""#, "/n", r#"\""#, "}"] {
        out.push(delta(
            &format!(r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":"{piece}"}}}}]}}"#),
            "null",
        ));
    }
    out.push(delta("{}", &format!("\"{finish}\"")));
    out.push(
        "data: {\"choices\":[],\"timings\":{\"cache_n\":435,\"prompt_n\":1,\"predicted_n\":39}}\n\n"
            .into(),
    );
    out.push("data: [DONE]\n\n".into());
    out
}

fn streaming(events: Vec<String>) -> Upstream {
    Upstream::start(move |_, stream| {
        let mut out = STREAM_HEAD.to_vec();
        for e in &events {
            out.extend_from_slice(&chunk(e.as_bytes()));
        }
        out.extend_from_slice(b"0\r\n\r\n");
        let _ = stream.write_all(&out);
    })
}

fn proxy(up: &Upstream, infer: &str, ack: Ack) -> Proxy {
    let dir = TempDir::new("witness");
    let uid = dir.uid();
    Proxy::start_witnessed(
        dir,
        uid,
        &format!("http://127.0.0.1:{}", up.port),
        infer,
        ack,
    )
}

#[test]
fn each_forcing_field_an_unknown_field_other_tools_and_a_prefill_are_400_and_never_forwarded() {
    let up = streaming(tool_call_events("tool_calls"));
    let p = proxy(&up, "", Ack::Now);
    let prefill = {
        let mut b: serde_json::Value = serde_json::from_slice(&chat_body()).expect("json");
        let m = ChatMessage::assistant(Some("{\"path\": \"/etc/".into()), None, &[]);
        b["messages"]
            .as_array_mut()
            .expect("messages")
            .push(m.to_value());
        serde_json::to_vec(&b).expect("body")
    };
    let cases = [
        (
            chat_body_with(json!({"grammar": "root ::= \"x\""})),
            "grammar",
        ),
        (
            chat_body_with(json!({"response_format": {"type": "json_object"}})),
            "response_format",
        ),
        (
            chat_body_with(json!({"json_schema": {"type": "object"}})),
            "json_schema",
        ),
        (
            chat_body_with(json!({"logit_bias": [[1, 100]]})),
            "logit_bias",
        ),
        (
            chat_body_with(json!({"chat_template_kwargs": {"x": 1}})),
            "chat_template_kwargs",
        ),
        (chat_body_with(json!({"tool_choice": "required"})), "shape"),
        (chat_body_with(json!({"tools": []})), "tools"),
        (chat_body_with(json!({"stream": false})), "stream"),
        (prefill, "prefill"),
    ];
    for (body, word) in cases {
        let (status, headers, got) = p.call("POST", "/v1/chat/completions", &body);
        assert_eq!(status, 400, "{word}");
        assert!(!headers.contains(COMPLETION_HEADER), "{word}");
        let got: serde_json::Value = serde_json::from_slice(&got).expect("a JSON error");
        assert_eq!(got["error"]["type"], "unwitnessable_request", "{word}");
        let message = got["error"]["message"].as_str().expect("message");
        assert!(message.contains(word), "{word}: {message}");
    }
    up.saw_nothing();
    assert!(
        p.witness.reports.try_recv().is_err(),
        "nothing was witnessed"
    );
}

#[test]
fn an_answer_is_reported_as_the_model_made_it_before_done_and_relayed_byte_for_byte() {
    let report = held_until_acknowledged(tool_call_events("tool_calls"));
    let messages = [
        ChatMessage::system("sys"),
        ChatMessage::user("What is 2+2?"),
    ];
    let digests: Vec<_> = messages.iter().map(ChatMessage::digest).collect();
    assert_eq!(report.prompt, digests);
    let call = read_file_call();
    assert_eq!(report.calls, std::slice::from_ref(&call));
    assert_eq!(
        (report.finish.as_str(), report.runnable),
        ("tool_calls", true)
    );
    // What loopd logs and replays of this answer has the digest reported.
    assert_eq!(
        report.answer,
        ChatMessage::assistant(None, None, &[&call]).digest()
    );
}

/// Past its first 64 KiB an answer's copy is parsed on a thread of its own while the bytes
/// go on (src/watch.rs): witnessed alike, its end held alike, the text's digests right
/// (characters serde_json escapes included), an `[DONE]` in the text no end.
#[test]
fn a_long_answer_is_witnessed_alike_and_its_end_still_held() {
    let text: Vec<String> = (0..1500)
        .map(|i| {
            let end = if i == 1200 { "[DONE]" } else { "" };
            format!("{i:03} quote\" back\\slash é✓ {end} {} ", "x".repeat(300))
        })
        .collect();
    let mut events: Vec<String> = text
        .iter()
        .map(|t| {
            let delta = json!({"choices": [{"index": 0, "delta": {"content": t}}]});
            format!("data: {delta}\n\n")
        })
        .collect();
    events.extend(tool_call_events("tool_calls"));
    assert!(events.concat().len() > 200 * 1024);
    let report = held_until_acknowledged(events);
    let call = read_file_call();
    assert_eq!(report.calls, std::slice::from_ref(&call));
    assert_eq!(
        report.answer,
        ChatMessage::assistant(Some(text.concat()), None, &[&call]).digest()
    );
    let mut answer = proto::attest::Answer::default();
    answer.content = Some(text.concat());
    answer.tool_calls = vec![call];
    answer.finish = Some("tool_calls".into());
    assert_eq!(report.forms, proto::composed::answer_forms(&answer, false));
}

/// An error chunk past the first 64 KiB: the stream is cut, never ended with `[DONE]`,
/// whether the upstream goes on to `[DONE]` or ends its body without it.
#[test]
fn a_long_answer_that_breaks_is_cut_before_its_end() {
    let piece = json!({"choices": [{"index": 0, "delta": {"content": "y".repeat(1000)}}]});
    for ends in [true, false] {
        let mut events = vec![format!("data: {piece}\n\n"); 200];
        events.push("data: {\"error\":{\"code\":500,\"message\":\"boom\"}}\n\n".into());
        events.extend(vec![format!("data: {piece}\n\n"); 100]);
        if ends {
            events.extend(tool_call_events("tool_calls"));
        }
        let up = streaming(events);
        let p = proxy(&up, "", Ack::Now);
        let (data, end) = events_to_the_end(p.chat().expect("request"));
        assert!(end.is_some(), "{ends}: the stream is cut, not ended");
        assert!(
            data.len() >= 200,
            "{ends}: the answer before it went through"
        );
        assert!(!data.iter().any(|d| d == "[DONE]"), "{ends}");
        assert!(
            p.witness.reports.try_recv().is_err(),
            "{ends}: nothing was witnessed"
        );
    }
}

/// The data of every event of an answer, and how its stream ended: `None` whole, else the
/// error that cut it.
fn events_to_the_end<B: Read>(
    resp: strict_http::Response<B>,
) -> (Vec<String>, Option<strict_http::HttpError>) {
    let mut sse = SseReader::new(resp.body);
    let mut data = Vec::new();
    loop {
        match sse.next_event() {
            Ok(Some(e)) => data.push(e.data),
            Ok(None) => return (data, None),
            Err(e) => return (data, Some(e)),
        }
    }
}

fn read_file_call() -> ToolCall {
    ToolCall {
        id: "xffiZ".into(),
        name: "read_file".into(),
        arguments: "{\"path\": \"/n\"}".into(),
    }
}

/// Streams `events` through inferproxy: every byte up to the one that completes `[DONE]`
/// arrives as sent, then nothing until the report is acknowledged; the report.
fn held_until_acknowledged(events: Vec<String>) -> proto::attest::WitnessReport {
    let up = streaming(events.clone());
    let gate = Gate::new();
    let p = proxy(&up, "", Ack::After(gate.clone()));
    let body = chat_body();
    let resp = strict_http::request(p.connect(), "POST", "/v1/chat/completions", &[], &body)
        .expect("request");
    assert_eq!(resp.status, 200);
    let id = resp
        .headers
        .get(COMPLETION_HEADER)
        .expect("the completion is named");
    let id = CompletionId::new(id).expect("a completion id");
    let mut stream = resp.body;
    // Everything up to the blank line that would complete [DONE] arrives; then the wait.
    let whole = events.concat().into_bytes();
    let mut before = vec![0u8; whole.len() - 1];
    stream
        .read_exact(&mut before)
        .expect("all but the last byte");
    assert!(before == whole[..whole.len() - 1], "relayed byte for byte");
    let report = p.witness.next();
    assert_eq!(report.completion, id);
    // No more than that until brokerd acknowledges.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut last = [0u8; 1];
        let _ = tx.send(stream.read_exact(&mut last).map(|()| last));
        let mut rest = Vec::new();
        let _ = tx.send(stream.read_to_end(&mut rest).map(|_| [0]));
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "the byte that completes [DONE] came unacknowledged"
    );
    gate.open();
    let last = rx
        .recv_timeout(PATIENCE)
        .expect("the last byte after the ack");
    assert_eq!(last.expect("read"), *b"\n");
    let end = rx.recv_timeout(PATIENCE).expect("the end");
    assert!(end.is_ok(), "the stream ends whole: {end:?}");
    report
}

#[test]
fn a_cut_answer_is_reported_not_runnable() {
    let up = streaming(tool_call_events("length"));
    let p = proxy(&up, "", Ack::Now);
    let resp = p.chat().expect("request");
    let mut sse = SseReader::new(resp.body);
    let mut last = String::new();
    while let Some(e) = sse.next_event().expect("event") {
        last = e.data;
    }
    assert_eq!(last, "[DONE]");
    let report = p.witness.next();
    assert_eq!((report.finish.as_str(), report.runnable), ("length", false));
    assert_eq!(report.calls.len(), 1);
}

#[test]
fn without_the_acknowledgement_the_stream_ends_without_done() {
    for ack in [Ack::Never, Ack::Now] {
        let never = matches!(ack, Ack::Never);
        let up = streaming(tool_call_events("tool_calls"));
        let p = proxy(&up, "witness_timeout = \"500ms\"", ack);
        if !never {
            // No brokerd at all: the socket is gone.
            std::fs::remove_file(
                p.sock
                    .with_file_name("")
                    .join("../infer-broker/witness.sock"),
            )
            .expect("remove witness.sock");
        }
        let start = Instant::now();
        let (data, end) = events_to_the_end(p.chat().expect("request"));
        assert!(end.is_some(), "the stream is cut, not ended: {data:?}");
        assert!(!data.iter().any(|d| d == "[DONE]"), "{data:?}");
        assert!(data.len() > 5, "the answer itself went through: {data:?}");
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        let log = p.log();
        assert!(log.contains("not witnessed, so no [DONE]"), "{log}");
    }
}

#[test]
fn a_completion_header_from_upstream_is_not_passed_on() {
    let up = Upstream::start(|_, stream| {
        let mut out = STREAM_HEAD.to_vec();
        let at = out.windows(2).position(|w| w == b"\r\n").expect("line") + 2;
        let forged = format!("{COMPLETION_HEADER}: c-{}\r\n", "0".repeat(32));
        out.splice(at..at, forged.into_bytes());
        out.extend_from_slice(&chunk(b"data: [DONE]\n\n"));
        out.extend_from_slice(b"0\r\n\r\n");
        let _ = stream.write_all(&out);
    });
    let p = proxy(&up, "", Ack::Now);
    let resp = p.chat().expect("request");
    let named: Vec<&str> = resp.headers.get_all(COMPLETION_HEADER).collect();
    let reported = p.witness.next();
    assert_eq!(named, [reported.completion.as_str()]);
    assert_ne!(named[0], format!("c-{}", "0".repeat(32)));
}
