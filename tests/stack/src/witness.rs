//! The witness, stood in for where a test sends tool requests straight to brokerd: each
//! such request first registers, on brokerd's witness.sock as inferproxy would, an answer
//! that made that call (brokerd runs nothing else, and has no switch to run anything else).

use std::path::{Path, PathBuf};

use daemon::conn::Conn;
use proto::Message;
use proto::attest::{ChatMessage, CompletionId, WitnessRef, WitnessReport};

/// The witness.sock of the home whose loopd-side socket `conn` is connected to
/// (`run/loop-broker/broker.sock` and `run/infer-broker/witness.sock` of one [`Home`]).
pub(crate) fn witness_sock_of(conn: &Conn) -> PathBuf {
    let local = conn
        .handle()
        .and_then(|s| s.peer_addr())
        .expect("peer address");
    let sock = local.as_pathname().expect("a path socket");
    sock.parent()
        .and_then(Path::parent)
        .expect("a home's run directory")
        .join("infer-broker/witness.sock")
}

/// Registers on `witness_sock` (brokerd's), as inferproxy does after a completion, an
/// answer that made exactly this one call and ended normally; returns the call's witness.
/// The tests that send tool requests straight to brokerd go through it: brokerd has no
/// other way to run a call.
pub fn witnessed(witness_sock: &Path, tool: &str, arguments: &str) -> WitnessRef {
    try_witnessed(witness_sock, tool, arguments).expect("witness report")
}

/// [`witnessed`], or `None` when brokerd does not acknowledge (it was killed, say).
pub fn try_witnessed(witness_sock: &Path, tool: &str, arguments: &str) -> Option<WitnessRef> {
    let call = proto::ToolCall {
        id: "call-0".into(),
        name: tool.to_owned(),
        arguments: arguments.to_owned(),
    };
    // The prompt is an owner's message, registered as a channel does.
    let chat = witness_sock
        .parent()
        .and_then(Path::parent)
        .expect("a home's run directory")
        .join("chat-broker/broker.sock");
    owner_words::register(&chat, "test").ok()?;
    let report = WitnessReport {
        completion: fresh_completion(),
        prompt: vec![ChatMessage::user("test").digest()],
        answer: ChatMessage::assistant(None, None, &[&call]).digest(),
        calls: vec![call],
        finish: "tool_calls".into(),
        runnable: true,
        forms: Vec::new(),
    };
    try_report(witness_sock, report)
}

/// Sends `report` on `witness_sock` and waits for brokerd's `witness_recorded`; the ref of
/// its first call.
pub fn report_witness(witness_sock: &Path, report: WitnessReport) -> WitnessRef {
    try_report(witness_sock, report).expect("witness report recorded")
}

fn try_report(witness_sock: &Path, report: WitnessReport) -> Option<WitnessRef> {
    let completion = report.completion.clone();
    let mut conn = Conn::connect(witness_sock).ok()?;
    let done = conn.call(1, Message::WitnessReport(report), |_| {}).ok()?;
    matches!(&done.msg, Message::WitnessRecorded(r) if r.completion == completion).then_some(
        WitnessRef {
            completion,
            index: 0,
        },
    )
}

/// A completion id no other in this test run has.
pub fn fresh_completion() -> CompletionId {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = crate::unique(&format!("completion-{}-{nanos}", std::process::id()));
    let digest = proto::Hash32::digest(seed.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_bytes()[..16]);
    CompletionId::from_random(bytes)
}

/// A chat request of `messages` as loopd builds it (proto's tools, streamed), with `extra`
/// fields merged in.
pub fn chat_body(messages: &[ChatMessage], extra: serde_json::Value) -> serde_json::Value {
    let mut body = serde_json::json!({
        "messages": messages.iter().map(ChatMessage::to_value).collect::<Vec<_>>(),
        "tools": proto::attest::definitions(),
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 256,
        "id_slot": 0,
        "cache_prompt": true,
    });
    if let (Some(o), serde_json::Value::Object(more)) = (body.as_object_mut(), extra) {
        o.extend(more);
    }
    body
}

/// One completion of `messages` through `home`'s inferproxy ([`chat_body`]): the completion
/// it was witnessed as, and the answer. Panics unless the stream ends with `[DONE]` (brokerd
/// recorded the report).
pub fn complete(
    home: &crate::Home,
    messages: &[ChatMessage],
    extra: serde_json::Value,
) -> (CompletionId, proto::attest::Answer) {
    let body = chat_body(messages, extra);
    let sock = home.root.join("run/loop-infer/infer.sock");
    let stream = std::os::unix::net::UnixStream::connect(sock).expect("infer.sock");
    let bytes = serde_json::to_vec(&body).expect("body");
    let resp =
        strict_http::request(stream, "POST", "/v1/chat/completions", &[], &bytes).expect("request");
    assert_eq!(resp.status, 200);
    let id = resp
        .headers
        .get(proto::attest::COMPLETION_HEADER)
        .expect("a completion");
    let id = CompletionId::new(id).expect("an id");
    let mut sse = strict_http::SseReader::new(resp.body);
    let mut answer = proto::attest::Answer::default();
    while let Some(e) = sse.next_event().expect("event") {
        if e.data == "[DONE]" {
            return (id, answer);
        }
        answer.feed(&e.data, |_| {}).expect("chunk");
    }
    panic!("no [DONE]: the report was not recorded");
}
