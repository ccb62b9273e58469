//! Answers the model did not finish: a tool call cut by `max_tokens` (`finish_reason`
//! `length`, arguments cut mid-string) is never run and never replayed in a form the server
//! refuses, and a log written before loopd checked this is repaired by an appended record.

use proto::chat::{ChatEvent, TurnEnd};
use proto::{LogRecord, Withdrawal};
use stack::{Home, read_grant};

use crate::agent::records;

const SCRIPT: &str = r#"
[server]
n_ctx = 16384

[[rule]]
[rule.match]
user_contains = "list"
[[rule.answer.tool_calls]]
name = "list_dir"
arguments = '{"path": "NOTES"}'

[default]
text = "Fine."
"#;

fn decisions(home: &Home) -> usize {
    home.audit_lines()
        .iter()
        .filter(|l| matches!(l, proto::AuditLine::Decision(_)))
        .count()
}

#[test]
fn a_tool_call_cut_by_max_tokens_is_not_run_and_the_session_goes_on() {
    let home = Home::new("cutcall", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant(
        "notes-list",
        &read_grant("auto", &notes, "").replace("read_file", "list_dir"),
    );
    // 15 fake tokens: the call's head and the first 14 bytes of its arguments.
    let agent = home.start_agent(
        &SCRIPT.replace("NOTES", &notes.display().to_string()),
        "max_tokens = 15\n",
    );
    let t = agent.chat(None, "list my notes");
    let session = t.reply.session.clone();
    assert_eq!(
        t.reply.end,
        TurnEnd::Cut {
            finish: "length".into(),
            withdrawn: 1
        }
    );
    assert!(
        !t.events.iter().any(|e| matches!(
            e,
            ChatEvent::ToolCall { .. } | ChatEvent::ToolResponse { .. }
        )),
        "{:?}",
        t.events
    );
    assert_eq!(decisions(&home), 0, "brokerd never saw the cut call");
    let log = records(&home, &session, 0);
    // No call in the log is one the server would refuse to render: the assistant record
    // has none, the withdrawn record keeps the cut one for the owner.
    assert!(log.iter().all(|r| match r {
        LogRecord::Assistant { tool_calls, .. } => tool_calls.is_empty(),
        _ => true,
    }));
    let withdrawn: Vec<_> = log
        .iter()
        .filter_map(|r| match r {
            LogRecord::Withdrawn { cause, calls, .. } => Some((*cause, calls.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(withdrawn.len(), 1, "{log:?}");
    assert_eq!(withdrawn[0].0, Withdrawal::Cut);
    assert_eq!(withdrawn[0].1[0].name, "list_dir");
    // Cut mid-string, as the real server cuts it: 14 bytes of the arguments.
    let whole = format!("{{\"path\": \"{}\"}}", notes.display());
    assert_eq!(withdrawn[0].1[0].arguments, whole[..14]);

    // Later turns work: the server renders the history.
    for text in ["hello", "and again"] {
        let t = agent.chat(Some(&session), text);
        assert_eq!(t.reply.end, TurnEnd::Answered, "{text}");
        assert_eq!(t.reply.text, "Fine.");
    }
    let requests = agent.requests();
    let last = requests
        .as_array()
        .and_then(|a| a.last())
        .expect("a request");
    assert_eq!(last["rule"], "default", "{last}");

    // The owner reads how many calls were not run.
    let out = home.bxctl(&["chat", "-m", "list my notes again"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("[the answer was cut off (length); its tool call was not run]"),
        "{shown}"
    );
    home.assert_audit_good();
}

/// A log as loopd wrote it before it checked the finish reason: the cut call was run
/// (brokerd refused its arguments), and every later request got HTTP 500 "Failed to parse
/// tool call arguments as JSON".
fn poisoned_log(session: &str, notes: &str) -> String {
    let call = format!("{{\\\"path\\\": \\\"{notes}/no");
    [
        format!(
            r#"{{"type":"session_start","time":"2026-11-30T10:00:00.000Z","session":"{session}","epoch":0,"slot":0,"baseline":"{}"}}"#,
            "0".repeat(64)
        ),
        r#"{"type":"user","time":"2026-11-30T10:00:01.000Z","content":"list my notes"}"#.into(),
        format!(
            r#"{{"type":"assistant","time":"2026-11-30T10:00:02.000Z","content":null,"reasoning_content":null,"tool_calls":[{{"id":"Rk2","name":"list_dir","arguments":"{call}"}}]}}"#
        ),
        r#"{"type":"tool_result","time":"2026-11-30T10:00:03.000Z","call":1,"tool_call_id":"Rk2","content":"the tool failed: brokerd: refused: invalid arguments","class":"private","untrusted":true,"truncated":false}"#.into(),
        r#"{"type":"user","time":"2026-11-30T10:01:00.000Z","content":"hello?"}"#.into(),
        String::new(),
    ]
    .join("\n")
}

#[test]
fn a_log_the_server_refuses_to_render_is_repaired_by_an_appended_record() {
    use std::os::unix::fs::OpenOptionsExt;
    let home = Home::new("poisoned", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    let agent = home.start_agent(&SCRIPT.replace("NOTES", &notes.display().to_string()), "");
    let session = proto::SessionId::new("s-20261130-poisoned").expect("id");
    let dir = home.root.join(format!("home/sessions/{session}"));
    std::fs::create_dir_all(&dir).expect("session dir");
    let before = poisoned_log(session.as_str(), &notes.display().to_string());
    let path = dir.join("0.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .expect("log");
    std::io::Write::write_all(&mut f, before.as_bytes()).expect("write");
    drop(f);

    let t = agent.chat(Some(&session), "hello");
    assert_eq!(t.reply.end, TurnEnd::Answered, "{:?}", t.reply);
    assert_eq!(t.reply.text, "Fine.");
    // The log was appended to, never rewritten.
    let after = std::fs::read_to_string(&path).expect("log");
    assert!(after.starts_with(&before), "{after}");
    let log = records(&home, &session, 0);
    let withdrawn: Vec<_> = log
        .iter()
        .filter_map(|r| match r {
            LogRecord::Withdrawn { cause, calls, .. } => Some((*cause, calls.len())),
            _ => None,
        })
        .collect();
    assert_eq!(withdrawn, [(Withdrawal::Unrenderable, 1)]);
    // Neither the call nor its result went back to the server.
    let requests = agent.requests();
    let last = requests
        .as_array()
        .and_then(|a| a.last())
        .expect("a request");
    let messages = last["request"]["messages"].as_array().expect("messages");
    assert!(
        messages
            .iter()
            .all(|m| m.get("tool_calls").is_none() && m["role"] != "tool"),
        "{messages:?}"
    );
    // And the next turn needs no repair again.
    let t = agent.chat(Some(&session), "thanks");
    assert_eq!(t.reply.end, TurnEnd::Answered);
    assert_eq!(
        records(&home, &session, 0)
            .iter()
            .filter(|r| matches!(r, LogRecord::Withdrawn { .. }))
            .count(),
        1
    );
}
