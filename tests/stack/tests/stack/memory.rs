//! Core memory is pinned per epoch: an edit of `memory/core.md` reaches the next epoch
//! only, a restarted loopd replays the bytes the epoch started from, and the epoch's
//! `SessionStart.baseline` is their hash.

use proto::chat::ChatEvent;
use proto::{Hash32, LogRecord};
use stack::Home;

use crate::agent::records;

/// What the fake model answers: a long echo (so the context fills), or the summary.
const SCRIPT: &str = r#"
[server]
n_ctx = 2220

[[rule]]
[rule.match]
user_contains = "cut short"
[rule.answer]
text = "SUMMARY: the owner chatted."

[default]
text = "{last_user} {last_user} {last_user}"
"#;

/// The system message of the fake server's last request.
fn last_prompt(agent: &stack::Agent) -> String {
    let requests = agent.requests();
    let last = requests
        .as_array()
        .and_then(|a| a.last())
        .expect("a request");
    last["prompt"].as_str().unwrap_or_default().to_owned()
}

/// Chats filler (at most 40 turns) until loopd compacts the session.
fn chat_until_compacted(agent: &stack::Agent, session: &proto::SessionId) {
    for i in 0..40 {
        let t = agent.chat(
            Some(session),
            &format!("filler words to fill the context {i}"),
        );
        if t.events
            .iter()
            .any(|e| matches!(e, ChatEvent::Compacted { .. }))
        {
            return;
        }
    }
    panic!("no compaction happened");
}

fn baseline(records: &[LogRecord]) -> Hash32 {
    match records.first() {
        Some(LogRecord::SessionStart { baseline, .. }) => *baseline,
        other => panic!("not a SessionStart: {other:?}"),
    }
}

/// The head loopd puts before a summary (`loopd::prompt`).
const SUMMARY_HEAD: &str = "Summary of the conversation so far:\n";

/// What an epoch starts from, as loopd sends it: the system message (the pinned core memory)
/// and the summary's message of its own (`docs/loop.md`).
fn start_hash(core: &str, summary: Option<&str>) -> Hash32 {
    let mut start = vec![serde_json::json!({"role": "system", "content": core})];
    if let Some(summary) = summary {
        start.push(serde_json::json!({
            "role": "assistant",
            "content": format!("{SUMMARY_HEAD}{summary}"),
        }));
    }
    Hash32::digest(serde_json::Value::Array(start).to_string().as_bytes())
}

#[test]
fn a_core_memory_edit_reaches_the_next_epoch_only_and_replay_uses_the_pinned_bytes() {
    let home = Home::new("core", "");
    let core = home.root.join("home/memory/core.md");
    std::fs::create_dir_all(core.parent().expect("memory dir")).expect("mkdir");
    std::fs::write(&core, "CORE-ONE: you are a test assistant.").expect("core");
    let mut agent = home.start_agent(SCRIPT, "compact_percent = 50\n");
    let t = agent.chat(None, "hello");
    let session = t.reply.session.clone();
    assert!(last_prompt(&agent).contains("CORE-ONE"));
    assert_eq!(
        baseline(&records(&home, &session, 0)),
        start_hash("CORE-ONE: you are a test assistant.", None)
    );

    // The owner edits core memory mid-epoch: the running epoch keeps its bytes.
    std::fs::write(&core, "CORE-TWO: you are an edited assistant.").expect("core");
    agent.chat(Some(&session), "still there?");
    let prompt = last_prompt(&agent);
    assert!(
        prompt.contains("CORE-ONE") && !prompt.contains("CORE-TWO"),
        "{prompt}"
    );

    // A restarted loopd replays the epoch from the pinned bytes, not today's core.md.
    agent.daemons[0].kill();
    agent.daemons[0] = home.daemon("loopd");
    agent.chat(Some(&session), "after a restart");
    let prompt = last_prompt(&agent);
    assert!(
        prompt.contains("CORE-ONE") && !prompt.contains("CORE-TWO"),
        "{prompt}"
    );

    // The next epoch starts from the edited core memory.
    chat_until_compacted(&agent, &session);
    let prompt = last_prompt(&agent);
    assert!(
        prompt.contains("CORE-TWO") && !prompt.contains("CORE-ONE"),
        "{prompt}"
    );
    let summary = match records(&home, &session, 0).last() {
        Some(LogRecord::EpochEnd { summary, .. }) => summary.clone(),
        other => panic!("epoch 0 did not end: {other:?}"),
    };
    assert_eq!(
        baseline(&records(&home, &session, 1)),
        start_hash("CORE-TWO: you are an edited assistant.", Some(&summary))
    );
    // brokerd read both versions from the owner's file as it accounted the reports: every
    // prompt of both epochs was accounted for, nothing fell back.
    assert_eq!(agent.fallbacks(), Vec::<String>::new());
}

/// A session that read an untrusted, secret note keeps both labels across compaction: the
/// summary (which may quote the note) starts the next epoch of the same session, which
/// brokerd still holds at secret and untrusted.
#[test]
fn compaction_keeps_the_untrusted_flag_and_the_taint_of_a_note_read_before_it() {
    let (home, _) = crate::notes::notes_home("compact-note");
    let web = home.files("web", &[("page.html", "secret plans, and an injection")]);
    home.write_grant(
        "web-files",
        &stack::read_grant(
            "auto",
            &web,
            "result_class = \"secret\"\nuntrusted = true\nif_untrusted = \"deny\"",
        ),
    );
    let script = format!(
        r#"
[server]
n_ctx = 1180

[[rule]]
[rule.match]
user_contains = "cut short"
[rule.answer]
text = "SUMMARY: the note said secret plans."

[[rule]]
[rule.match]
tool_result_contains = ""
[rule.answer]
text = "Done."

[[rule]]
[rule.match]
user_contains = "read my note"
[[rule.answer.tool_calls]]
name = "note_read"
arguments = '{{"name":"plans"}}'

[[rule]]
[rule.match]
user_contains = "the page"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{{"path":"{web}/page.html"}}'

[default]
text = "{{last_user}} {{last_user}} {{last_user}}"
"#,
        web = web.display()
    );
    let agent = home.start_agent(&script, "compact_percent = 50\n");
    // Another session read the untrusted page and wrote the note.
    let page = format!(r#"{{"path":"{}/page.html"}}"#, web.display());
    crate::notes::call(&home, "s-writer", 1, "read_file", &page);
    crate::notes::write(&home, "s-writer", 2, "plans", "secret plans");
    let t = agent.chat(None, "read my note");
    let session = t.reply.session.clone();
    assert!(matches!(
        crate::agent::responses(&t.events)[..],
        [proto::ToolResponse::Result {
            class: proto::DataClass::Secret,
            untrusted: true,
            ..
        }]
    ));
    chat_until_compacted(&agent, &session);
    let out = home.bxctl(&["session", session.as_str()]);
    let state = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        state.contains("secret") && state.contains("untrusted"),
        "{state}"
    );
    // The grant that an untrusted session may not use is still closed to it.
    let t = agent.chat(Some(&session), "show me the page");
    assert!(
        matches!(
            crate::agent::responses(&t.events)[..],
            [proto::ToolResponse::Denied {
                reason: proto::DenyReason::DeniedByGrant,
                ..
            }]
        ),
        "{:?}",
        t.events
    );
}
