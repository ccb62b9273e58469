//! What the tool makes of its stdin: garbage, oversized input, and the one JSON answer.

use proto::toolrun::ToolOutput;
use toolkit::{MAX_INPUT, answer, render, run, run_bytes};

use crate::support::{failed, run_raw};

#[test]
fn garbage_on_stdin_is_a_failed_answer_with_exit_zero() {
    failed(run_raw(b"{\"call\":", None), "invalid invocation");
}

#[test]
fn bad_input_is_a_failed_answer() {
    for (input, word) in [
        (&b"not json"[..], "invalid invocation"),
        (br#"{"call":{"tool":"shell","arguments":{}},"max_bytes":1,"roots":[],"addresses":[],"timeout_ms":1}"#, "unknown variant"),
        (br#"{"call":{"tool":"read_file","arguments":{"path":"/a"}},"max_bytes":1,"roots":[],"addresses":[],"timeout_ms":1,"extra":1}"#, "unknown field"),
    ] {
        match answer(run_bytes(input)) {
            ToolOutput::Failed { message } => assert!(message.contains(word), "{message}"),
            other => panic!("expected failed, got {other:?}"),
        }
    }
}

#[test]
fn oversized_input_is_refused_without_parsing() {
    let big = vec![b' '; (MAX_INPUT + 10) as usize];
    match answer(run(&big[..]).expect("readable")) {
        ToolOutput::Failed { message } => assert!(message.contains("larger than")),
        other => panic!("expected failed, got {other:?}"),
    }
}

#[test]
fn render_is_one_json_object() {
    let out = ToolOutput::Ok {
        content: "a\nb".into(),
        truncated: false,
    };
    assert_eq!(
        render(&out),
        r#"{"status":"ok","content":"a\nb","truncated":false}"#
    );
}
