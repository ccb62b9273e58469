//! A turn whose client hangs up (Ctrl-C in `bxctl chat`) while a tool runs: the tool
//! finishes, its result is logged, the model is not asked again, and the session goes on.

use std::time::Duration;

use daemon::conn::Conn;
use proto::chat::{ChatEvent, ChatSend, TurnEnd};
use proto::{Envelope, LogRecord, Message};
use stack::{Home, read_grant};

use crate::agent::{SCRIPT, records};

#[test]
fn a_hang_up_while_a_tool_runs_lets_it_finish_and_logs_its_result() {
    let home = Home::new("cancel-tool", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant(
        "notes-read",
        &read_grant("auto", &notes, "untrusted = false"),
    );
    // A tool that takes its time: the real one, after a second and a half.
    home.tool_script(
        "slow-tool",
        &format!(
            "#!/bin/sh\nsleep 1.5\nexec {} \"$@\"\n",
            stack::bin("boxmaker-tool").display()
        ),
    );
    let agent = home.start_agent(&SCRIPT.replace("NOTES", &notes.display().to_string()), "");

    let mut conn = Conn::connect(&agent.chat).expect("chat");
    agent.register("What is on my todo list?");
    conn.write(&Envelope::last(
        1,
        Message::ChatSend(ChatSend {
            session: None,
            text: "What is on my todo list?".into(),
            cancel_on_hangup: true,
        }),
    ))
    .expect("send");
    let mut session = None;
    loop {
        let env = conn.read().expect("event");
        match env.msg {
            Message::ChatEvent(ChatEvent::Started { session: s, .. }) => session = Some(s),
            Message::ChatEvent(ChatEvent::ToolCall { .. }) => break,
            Message::ChatEvent(_) => {}
            other => panic!("the turn ended before its tool call: {other:?}"),
        }
    }
    let session = session.expect("started");
    // The owner hangs up while the tool runs.
    drop(conn);
    let result = stack::poll_until(Duration::from_secs(10), || {
        records(&home, &session, 0)
            .into_iter()
            .find_map(|r| match r {
                LogRecord::ToolResult { content, .. } => Some(content),
                _ => None,
            })
    })
    .expect("the running tool's result is logged");
    assert!(result.contains("buy milk"), "{result}");
    // The model is not asked again: its one request was the one that called the tool.
    std::thread::sleep(Duration::from_millis(500));
    let after: Vec<LogRecord> = records(&home, &session, 0);
    assert!(
        matches!(after.last(), Some(LogRecord::ToolResult { .. })),
        "the turn went on after the hang-up: {after:?}"
    );
    assert_eq!(
        agent.requests().as_array().map(Vec::len),
        Some(1),
        "{}",
        agent.requests()
    );
    // The session goes on, its log whole.
    let t = agent.chat(Some(&session), "What is on my todo list?");
    assert_eq!(t.reply.end, TurnEnd::Answered, "{:?}", t.reply);
    assert_eq!(t.reply.session, session);
}

#[test]
fn a_hang_up_while_the_model_streams_cuts_the_stream_and_logs_none_of_it() {
    let home = Home::new("cancel-stream", "");
    let script = r#"
[[rule]]
[rule.match]
user_contains = "again"
[rule.answer]
text = "Here again."

[default]
text = "one two three four five six seven eight nine ten eleven twelve"
chunk_delay_ms = 300
"#;
    let agent = home.start_agent(script, "");
    let mut conn = Conn::connect(&agent.chat).expect("chat");
    agent.register("Count to twelve");
    conn.write(&Envelope::last(
        1,
        Message::ChatSend(ChatSend {
            session: None,
            text: "Count to twelve".into(),
            cancel_on_hangup: true,
        }),
    ))
    .expect("send");
    let mut session = None;
    loop {
        match conn.read().expect("event").msg {
            Message::ChatEvent(ChatEvent::Started { session: s, .. }) => session = Some(s),
            Message::ChatEvent(ChatEvent::Text { .. }) => break,
            Message::ChatEvent(_) => {}
            other => panic!("the turn ended before its first words: {other:?}"),
        }
    }
    let session = session.expect("started");
    // The owner hangs up after the first words of a stream that takes seconds.
    drop(conn);
    // The next turn waits for the session's lock: had the stream run on, its answer would
    // be logged before this message.
    let t = agent.chat(Some(&session), "Say it again");
    assert_eq!(t.reply.text, "Here again.");
    let kinds: Vec<&str> = records(&home, &session, 0)
        .iter()
        .map(|r| match r {
            LogRecord::SessionStart { .. } => "start",
            LogRecord::User { .. } => "user",
            LogRecord::Assistant { .. } => "assistant",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["start", "user", "user", "assistant"], "{kinds:?}");
}
