//! The agent loop with the real binaries: fake llama-server, inferproxy, brokerd, loopd.

use proto::chat::{ChatEvent, TurnEnd};
use proto::{DenyReason, LogRecord, ToolResponse};
use stack::{Home, read_grant};

pub fn records(home: &Home, session: &proto::SessionId, epoch: u32) -> Vec<LogRecord> {
    let path = home
        .root
        .join(format!("home/sessions/{session}/{epoch}.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("log record"))
        .collect()
}

pub fn responses(events: &[ChatEvent]) -> Vec<ToolResponse> {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolResponse { response, .. } => Some(response.clone()),
            _ => None,
        })
        .collect()
}

pub const SCRIPT: &str = r#"
[server]
n_ctx = 16384
total_slots = 2

[[rule]]
[rule.match]
tool_result_contains = "buy milk"
[rule.answer]
text = "Your list: buy milk."

[[rule]]
[rule.match]
tool_result_contains = "denied"
[rule.answer]
text = "That was refused."

[[rule]]
[rule.match]
tool_result_contains = "todo.md"
[rule.answer]
text = "You have todo.md."

[[rule]]
[rule.match]
user_contains = "todo"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"NOTES/todo.md"}'

[[rule]]
[rule.match]
user_contains = "passwd"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"/etc/passwd"}'

[[rule]]
[rule.match]
user_contains = "list"
[[rule.answer.tool_calls]]
name = "list_dir"
arguments = '{"path":"NOTES"}'

[default]
text = "Hello from the fake model."
"#;

#[test]
fn a_conversation_with_allowed_denied_and_approved_tool_calls() {
    let home = Home::new("agent", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant(
        "notes-read",
        &read_grant("auto", &notes, "untrusted = false"),
    );
    home.write_grant(
        "notes-list",
        &read_grant("ask", &notes, "").replace("read_file", "list_dir"),
    );
    let agent = home.start_agent(&SCRIPT.replace("NOTES", &notes.display().to_string()), "");

    let t1 = agent.chat(None, "What is on my todo list?");
    assert_eq!(t1.reply.end, TurnEnd::Answered);
    assert_eq!(t1.reply.text, "Your list: buy milk.");
    let session = t1.reply.session.clone();
    assert!(matches!(t1.events.first(), Some(ChatEvent::Started { .. })));
    assert!(
        t1.events
            .iter()
            .any(|e| matches!(e, ChatEvent::ToolCall { tool, .. } if tool == "read_file"))
    );
    assert!(matches!(
        responses(&t1.events)[..],
        [ToolResponse::Result { .. }]
    ));
    // The reply streamed as text deltas that add up to the answer.
    let streamed: String = t1
        .events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Text { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, t1.reply.text);

    let t2 = agent.chat(Some(&session), "Read /etc/passwd please");
    assert_eq!(t2.reply.text, "That was refused.");
    assert!(matches!(
        responses(&t2.events)[..],
        [ToolResponse::Denied {
            reason: DenyReason::NoGrant,
            ..
        }]
    ));

    // The listing needs the owner: approve it from "another terminal".
    let config = home.config();
    let approver = std::thread::spawn(move || {
        let id = stack::wait_for_approval(&config);
        let ok = std::process::Command::new(stack::bin("bxctl"))
            .arg("--config")
            .arg(&config)
            .args(["approve", &id])
            .status()
            .expect("approve");
        assert!(ok.success());
    });
    let t3 = agent.chat(Some(&session), "Please list my notes");
    approver.join().expect("approver");
    assert_eq!(t3.reply.text, "You have todo.md.");
    assert!(matches!(
        responses(&t3.events)[..],
        [
            ToolResponse::PendingApproval { .. },
            ToolResponse::Result { .. }
        ]
    ));

    // The session log holds every step, in order, with call numbers that never repeat.
    let log = records(&home, &session, 0);
    assert!(matches!(log[0], LogRecord::SessionStart { .. }));
    let calls: Vec<u64> = log
        .iter()
        .filter_map(|r| match r {
            LogRecord::ToolResult { call, .. } => Some(call.0),
            _ => None,
        })
        .collect();
    assert_eq!(calls, [1, 2, 3]);
    assert_eq!(
        log.iter()
            .filter(|r| matches!(r, LogRecord::User { .. }))
            .count(),
        3
    );
    home.assert_audit_good();
    // Every message of every prompt of this honest session was accounted for by brokerd:
    // the owner's (registered), the answers (witnessed), the results, denials and approvals.
    assert_eq!(agent.fallbacks(), Vec::<String>::new());
}

#[test]
fn twenty_turns_are_served_from_the_prompt_cache_and_a_rewritten_history_is_caught() {
    let home = Home::new("cache", "");
    let agent = home.start_agent(
        "[server]\nn_ctx = 65536\n[default]\ntext = \"Noted: {last_user}\"\n",
        "",
    );
    let mut session = None;
    for i in 0..20 {
        let t = agent.chat(session.as_ref(), &format!("msg {i}"));
        assert_eq!(t.reply.end, TurnEnd::Answered, "{:?}", t.reply);
        session = Some(t.reply.session);
    }
    let requests = agent.requests();
    let list = requests.as_array().expect("request log");
    assert_eq!(list.len(), 20);
    let mut previous_prompt = 0;
    for (i, r) in list.iter().enumerate() {
        let cache = r["cache_n"].as_u64().expect("cache_n");
        let prompt = r["prompt_n"].as_u64().expect("prompt_n");
        if i > 0 {
            // Exactly: everything the previous request sent is reused.
            assert!(
                cache >= previous_prompt,
                "turn {}: {cache} < {previous_prompt}",
                i + 1
            );
            let share = cache as f64 / (cache + prompt) as f64;
            assert!(
                share >= 0.95,
                "turn {}: only {cache} of {} tokens cached",
                i + 1,
                cache + prompt
            );
        }
        previous_prompt = cache + prompt;
    }
    let session = session.expect("session");
    assert!(
        !records(&home, &session, 0)
            .iter()
            .any(|r| matches!(r, LogRecord::CacheLoss { .. }))
    );

    // Rewrite the history: the first user message is changed on disk.
    let path = home.root.join(format!("home/sessions/{session}/0.jsonl"));
    let text = std::fs::read_to_string(&path).expect("log");
    std::fs::write(&path, text.replacen("msg 0", "MSG 0", 1)).expect("rewrite");
    let t = agent.chat(Some(&session), "And one more.");
    assert_eq!(t.reply.end, TurnEnd::Answered);
    let loss = records(&home, &session, 0)
        .into_iter()
        .find_map(|r| match r {
            LogRecord::CacheLoss { expected, got, .. } => Some((expected, got)),
            _ => None,
        });
    let (expected, got) = loss.expect("a CacheLoss record");
    assert!(got < expected, "{got} >= {expected}");
}

#[test]
fn a_model_that_breaks_off_or_is_loading_is_reported_and_the_session_goes_on() {
    let home = Home::new("faults", "");
    let script = r#"
[[rule]]
max_uses = 1
[rule.match]
user_contains = "crash"
[rule.answer]
text = "This answer will be cut off in the middle of the stream."
truncate_after = 2

[[rule]]
max_uses = 1
[rule.match]
user_contains = "loading"
[rule.answer]
error = { status = 503, message = "Loading model" }

[default]
text = "Back to normal."
"#;
    let agent = home.start_agent(script, "");
    let t = agent.chat(None, "please crash now");
    let session = t.reply.session.clone();
    match &t.reply.end {
        TurnEnd::ModelError { detail } => assert!(detail.contains("broke off"), "{detail}"),
        other => panic!("{other:?}"),
    }
    let t = agent.chat(Some(&session), "are you loading?");
    match &t.reply.end {
        TurnEnd::ModelError { detail } => assert!(detail.contains("503"), "{detail}"),
        other => panic!("{other:?}"),
    }
    let t = agent.chat(Some(&session), "hello again");
    assert_eq!(t.reply.end, TurnEnd::Answered);
    assert_eq!(t.reply.text, "Back to normal.");
    // Nothing the owner said was lost.
    let users = records(&home, &session, 0)
        .into_iter()
        .filter(|r| matches!(r, LogRecord::User { .. }))
        .count();
    assert_eq!(users, 3);
}

#[test]
fn compaction_starts_a_new_epoch_from_a_summary_and_the_taint_carries_over() {
    let home = Home::new("compact", "");
    let secrets = home.files("secrets", &[("key.txt", "hunter2")]);
    let notes = home.files("notes", &[("n.md", "note")]);
    home.write_grant(
        "secrets",
        &read_grant("auto", &secrets, "result_class = \"secret\""),
    );
    home.write_grant(
        "notes",
        &read_grant("auto", &notes, "")
            .replace("max_taint = \"secret\"", "max_taint = \"private\""),
    );
    let script = format!(
        r#"
[server]
n_ctx = 1420

[[rule]]
[rule.match]
user_contains = "cut short"
[rule.answer]
text = "SUMMARY: the owner read a secret key."

[[rule]]
[rule.match]
tool_result_contains = ""
[rule.answer]
text = "Done."

[[rule]]
[rule.match]
user_contains = "key"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{{"path":"{secrets}/key.txt"}}'

[[rule]]
[rule.match]
user_contains = "note"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{{"path":"{notes}/n.md"}}'

[default]
text = "{{last_user}} {{last_user}} {{last_user}} {{last_user}}"
"#,
        secrets = secrets.display(),
        notes = notes.display()
    );
    let agent = home.start_agent(&script, "compact_percent = 50\n");
    let t = agent.chat(None, "read the key");
    let session = t.reply.session.clone();
    assert!(matches!(
        responses(&t.events)[..],
        [ToolResponse::Result { .. }]
    ));
    // Fill the context past half of n_ctx.
    let mut compacted = false;
    for i in 0..20 {
        let t = agent.chat(
            Some(&session),
            &format!("a long line of filler words, number {i}, to fill"),
        );
        if t.events
            .iter()
            .any(|e| matches!(e, ChatEvent::Compacted { .. }))
        {
            compacted = true;
            break;
        }
    }
    assert!(compacted, "no compaction happened");
    let old = records(&home, &session, 0);
    assert!(
        old.iter().any(
            |r| matches!(r, LogRecord::EpochEnd { summary, .. } if summary.contains("SUMMARY"))
        )
    );
    let new = records(&home, &session, 1);
    assert!(matches!(
        new[0],
        LogRecord::SessionStart {
            epoch: proto::Epoch(1),
            ..
        }
    ));
    // The summary is in the new epoch's prompt (a message of its own after the system prompt).
    let requests = agent.requests();
    let last = requests
        .as_array()
        .and_then(|a| a.last())
        .expect("a request");
    assert!(
        last["prompt"]
            .as_str()
            .unwrap_or_default()
            .contains("SUMMARY"),
        "{last}"
    );
    // brokerd still holds the session at secret: the private-only grant no longer applies.
    let t = agent.chat(Some(&session), "read my note");
    assert!(matches!(
        responses(&t.events)[..],
        [ToolResponse::Denied {
            reason: DenyReason::TaintTooHigh,
            ..
        }]
    ));
    home.assert_audit_good();
}
