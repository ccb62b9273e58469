//! Compaction against the fake's prompt-cache simulation: the summary request continues the
//! epoch's own prompt (only the instruction is new), is capped, and falls back to a shorter
//! summary when the first one is unusable (cut by its cap, or a tool call, which is never
//! run); the next epoch starts with the system prompt and the tools as cached, the summary
//! after them.

use proto::LogRecord;
use proto::chat::{ChatEvent, TurnEnd};
use serde_json::Value;
use stack::Home;

use crate::agent::records;

/// `FIRST` is the answer to the first summary request.
const SCRIPT: &str = r#"
[server]
n_ctx = 2000

[[rule]]
[rule.match]
user_contains = "three short sentences"
[rule.answer]
text = "SHORT SUMMARY: the owner sent filler."

[[rule]]
[rule.match]
user_contains = "cut short"
[rule.answer]
FIRST

[default]
text = "{last_user} {last_user} {last_user} {last_user} {last_user} {last_user}"
"#;

/// Fills the session until it compacts; returns the session and the compacting turn.
fn fill_until_compacted(home: &Home, first: &str) -> (stack::Agent, proto::SessionId, usize) {
    let agent = home.start_agent(&SCRIPT.replace("FIRST", first), "compact_percent = 50\n");
    let session = agent.chat(None, "hello").reply.session;
    for i in 0..40 {
        let t = agent.chat(
            Some(&session),
            &format!("a long line of filler words, number {i}, to fill the context"),
        );
        assert_eq!(t.reply.end, TurnEnd::Answered);
        if t.events
            .iter()
            .any(|e| matches!(e, ChatEvent::Compacted { .. }))
        {
            assert!(
                !t.events
                    .iter()
                    .any(|e| matches!(e, ChatEvent::ToolCall { .. })),
                "a tool call in a summary answer is never run"
            );
            return (agent, session, i);
        }
    }
    panic!("no compaction happened");
}

fn requests(agent: &stack::Agent) -> Vec<Value> {
    agent.requests().as_array().cloned().unwrap_or_default()
}

fn last_user(r: &Value) -> String {
    let messages = r["request"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The summary request and the next epoch's first request, checked against the epoch's
/// last request.
fn assert_cache_reused(all: &[Value], summary_text: &str) {
    let s = all
        .iter()
        .position(|r| last_user(r).contains("cut short"))
        .expect("a summary request");
    let (epoch, summary) = (&all[s - 1], &all[s]);
    // The same tools and the same messages, then the instruction: only that is new.
    assert_eq!(summary["request"]["tools"], epoch["request"]["tools"]);
    assert_eq!(summary["request"]["tool_choice"], "none");
    assert_eq!(summary["request"]["max_tokens"], 250, "an eighth of n_ctx");
    let before = epoch["request"]["messages"].as_array().expect("messages");
    let after = summary["request"]["messages"].as_array().expect("messages");
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(
        after.len(),
        before.len() + 2,
        "the epoch's last answer, the instruction"
    );
    let instruction = after
        .last()
        .and_then(|m| m["content"].as_str())
        .expect("text");
    // Fake tokens are 4 bytes; the instruction renders with 33 bytes of ChatML around it.
    let new = (instruction.len() + 33).div_ceil(4) as u64;
    assert!(
        num(&summary["prompt_n"]) <= new + 8,
        "the summary request re-processed {} tokens, the instruction is {new}",
        summary["prompt_n"]
    );
    // The next epoch's first request: the system prompt and tools come from the cache, the
    // summary (a message of its own after them) and the new message are processed.
    let next = all
        .iter()
        .skip(s + 1)
        .find(|r| !last_user(r).contains("cut short") && !last_user(r).contains("three short"))
        .expect("the next epoch's first request");
    let messages = next["request"]["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[0], before[0], "the same system prompt");
    assert_eq!(messages[1]["role"], "assistant");
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap_or_default()
            .ends_with(summary_text),
        "{messages:?}"
    );
    // "Summary of the conversation so far:\n" and ChatML around both: under 100 bytes.
    let fresh = (summary_text.len() + last_user(next).len() + 100).div_ceil(4) as u64;
    assert!(
        num(&next["prompt_n"]) <= fresh + 8,
        "the next epoch re-processed {} tokens; the summary and the message are {fresh}",
        next["prompt_n"]
    );
}

#[test]
fn a_summary_continues_the_epochs_cache_and_the_next_epoch_reuses_the_tools() {
    let home = Home::new("compact-cache", "");
    let (agent, session, _) =
        fill_until_compacted(&home, r#"text = "SUMMARY: the owner sent filler lines.""#);
    let old = records(&home, &session, 0);
    assert!(
        old.iter()
            .any(|r| matches!(r, LogRecord::EpochEnd { summary, .. }
        if summary == "SUMMARY: the owner sent filler lines."))
    );
    let all = requests(&agent);
    assert!(
        !all.iter().any(|r| last_user(r).contains("three short")),
        "no fallback for a summary that ended normally"
    );
    assert_cache_reused(&all, "SUMMARY: the owner sent filler lines.");
    // The next epoch's prompt holds the summary as a message of its own, which brokerd
    // accounts from the summary answer's witnessed forms: nothing falls back.
    let t = agent.chat(Some(&session), "and one more");
    assert_eq!(t.reply.end, TurnEnd::Answered);
    assert_eq!(agent.fallbacks(), Vec::<String>::new());
}

#[test]
fn a_summary_cut_by_its_cap_falls_back_to_a_shorter_one() {
    let home = Home::new("compact-cut", "");
    let long = "LONG ".repeat(300);
    let (agent, session, _) = fill_until_compacted(&home, &format!("text = \"{long}\""));
    let all = requests(&agent);
    let short = all
        .iter()
        .find(|r| last_user(r).contains("three short"))
        .expect("a shorter summary was asked for");
    assert!(num(&short["request"]["max_tokens"]) < 250);
    let old = records(&home, &session, 0);
    assert!(
        old.iter()
            .any(|r| matches!(r, LogRecord::EpochEnd { summary, .. }
        if summary == "SHORT SUMMARY: the owner sent filler."))
    );
    let t = agent.chat(Some(&session), "hello again");
    assert_eq!(t.reply.end, TurnEnd::Answered);
}

#[test]
fn a_tool_call_in_a_summary_answer_is_never_run() {
    let home = Home::new("compact-call", "");
    let (agent, session, _) = fill_until_compacted(
        &home,
        r#"tool_calls = [{ name = "read_file", arguments = '{"path": "/etc/shadow"}' }]"#,
    );
    assert!(
        !home
            .audit_lines()
            .iter()
            .any(|l| matches!(l, proto::AuditLine::Decision(_))),
        "brokerd never saw the summary's call"
    );
    let old = records(&home, &session, 0);
    assert!(
        old.iter()
            .any(|r| matches!(r, LogRecord::EpochEnd { summary, .. }
        if summary == "SHORT SUMMARY: the owner sent filler."))
    );
    assert!(
        requests(&agent)
            .iter()
            .any(|r| last_user(r).contains("three short"))
    );
}
