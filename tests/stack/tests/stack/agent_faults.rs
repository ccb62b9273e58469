//! The agent loop when things break: loopd killed mid-turn, a context that overflows.

use proto::LogRecord;
use proto::chat::{ChatEvent, TurnEnd};
use stack::{Home, read_grant};

use crate::agent::{SCRIPT, records};

#[test]
fn loopd_killed_mid_turn_leaves_a_whole_log_and_call_numbers_never_repeat() {
    let home = Home::new("loopkill", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant(
        "notes-read",
        &read_grant("auto", &notes, "untrusted = false"),
    );
    home.write_grant(
        "notes-list",
        &read_grant("ask", &notes, "").replace("read_file", "list_dir"),
    );
    let mut agent = home.start_agent(&SCRIPT.replace("NOTES", &notes.display().to_string()), "");
    // A turn whose tool call waits for the owner…
    let chat = agent.chat.clone();
    agent.register("Please list my notes");
    let waiting = std::thread::spawn(move || {
        let mut conn = daemon::conn::Conn::connect(&chat).expect("connect");
        let msg = proto::Message::ChatSend(proto::chat::ChatSend {
            session: None,
            text: "Please list my notes".into(),
            cancel_on_hangup: false,
        });
        let mut session = None;
        let _ = conn.call(1, msg, |e| {
            if let proto::Message::ChatEvent(ChatEvent::Started { session: s, .. }) = &e.msg {
                session = Some(s.clone());
            }
        });
        session.expect("the turn started")
    });
    let approval = stack::wait_for_approval(&home.config());
    // …and loopd dies: brokerd sees the request hang up and withdraws the approval, so no
    // answer can run a call that nobody waits for any more.
    agent.daemons[0].kill();
    let session = waiting.join().expect("client");
    let withdrawn = stack::poll_until(std::time::Duration::from_secs(5), || {
        let listed = home.bxctl(&["approvals"]);
        listed.status.success() && !String::from_utf8_lossy(&listed.stdout).contains(&approval)
    });
    assert!(
        withdrawn.is_some(),
        "the approval still waits for a dead loopd"
    );
    let deny = home.bxctl(&["deny", &approval]);
    assert_eq!(deny.status.code(), Some(1), "{deny:?}");
    agent.daemons[0] = home.daemon("loopd");

    // The session goes on: the interrupted call has a result, the next call a new number.
    let t = agent.chat(Some(&session), "What is on my todo list?");
    assert_eq!(t.reply.text, "Your list: buy milk.");
    let log = records(&home, &session, 0);
    let results: Vec<(u64, String)> = log
        .iter()
        .filter_map(|r| match r {
            LogRecord::ToolResult { call, content, .. } => Some((call.0, content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, 1);
    assert!(results[0].1.contains("interrupted"), "{results:?}");
    assert_eq!(results[1].0, 2);
    home.assert_audit_good();
}

#[test]
fn a_context_that_overflows_is_compacted_on_the_next_turn() {
    let home = Home::new("overflow", "");
    let notes = home.files("notes", &[("big.md", &"all work and no play ".repeat(300))]);
    home.write_grant(
        "notes-read",
        &read_grant("auto", &notes, "untrusted = false"),
    );
    let script = format!(
        r#"
[server]
n_ctx = 2020

[[rule]]
[rule.match]
user_contains = "cut short"
[rule.answer]
text = "SUMMARY: the owner had a big file read."

[[rule]]
[rule.match]
user_contains = "big"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{{"path":"{}/big.md"}}'

[default]
text = "Fine."
"#,
        notes.display()
    );
    let agent = home.start_agent(&script, "");
    let t = agent.chat(None, "read the big file");
    let session = t.reply.session.clone();
    match &t.reply.end {
        TurnEnd::ModelError { detail } => assert!(detail.contains("400"), "{detail}"),
        other => panic!("the overflow was not reported: {other:?}"),
    }
    let t = agent.chat(Some(&session), "hello");
    assert!(
        t.events
            .iter()
            .any(|e| matches!(e, ChatEvent::Compacted { .. }))
    );
    assert_eq!(t.reply.end, TurnEnd::Answered);
    assert_eq!(t.reply.text, "Fine.");
    // The overflowed history could not be continued as is: its summary was asked of the
    // epoch with the tool result cut short, and written.
    let requests = agent.requests();
    let asked: Vec<&serde_json::Value> = requests
        .as_array()
        .map(|a| a.iter().filter(|r| r["rule"] == "rule 1").collect())
        .unwrap_or_default();
    assert_eq!(
        asked.len(),
        1,
        "one summary request reached the model: {asked:?}"
    );
    assert!(
        asked[0]["prompt"]
            .as_str()
            .unwrap_or_default()
            .contains("[cut for the summary]")
    );
    assert!(records(&home, &session, 0).iter().any(
        |r| matches!(r, LogRecord::EpochEnd { summary, .. } if summary.starts_with("SUMMARY"))
    ));
}
