//! Compaction: when the context is nearly full, the epoch ends with a summary the local
//! model writes, and the next epoch starts from it. This is how the summary is had; the
//! turn ends the epoch with it.

use std::path::Path;
use std::time::Duration;

use proto::LogRecord;
use serde_json::json;

use crate::llm;
use crate::store::Session;

/// The request for a summary when the context is nearly full. The local model writes it:
/// it is the only one that has read the conversation, and nothing leaves the host.
const SUMMARY_PROMPT: &str = "The conversation is about to be cut short. Write a concise \
summary of everything above that you will need to continue: the owner's requests, facts \
learned, decisions taken and open tasks. Write only the summary.";

/// The summary when the model could not write one.
const NO_SUMMARY: &str = "(The earlier part of this conversation could not be summarised; \
ask the owner for anything needed from it.)";

/// How much of a tool result the summary request keeps.
const SUMMARY_RESULT_BYTES: usize = 2048;

fn trim_result(r: LogRecord) -> LogRecord {
    match r {
        LogRecord::ToolResult {
            time,
            call,
            tool_call_id,
            mut content,
            class,
            untrusted,
            outcome,
            ..
        } if content.len() > SUMMARY_RESULT_BYTES => {
            let mut cut = SUMMARY_RESULT_BYTES;
            while !content.is_char_boundary(cut) {
                cut -= 1;
            }
            content.truncate(cut);
            content.push_str(" [cut for the summary]");
            LogRecord::ToolResult {
                time,
                call,
                tool_call_id,
                content,
                class,
                untrusted,
                truncated: true,
                outcome,
            }
        }
        other => other,
    }
}

/// The summary the model writes of `session` (its system prompt `system`), for the next
/// epoch to start from.
pub fn summary(sock: &Path, timeout: Duration, system: &str, session: &Session) -> String {
    // Tool results are cut short for the summary: they are what fills a context, and a
    // summary request that overflows too would leave the session stuck.
    let trimmed: Vec<LogRecord> = session.records.iter().cloned().map(trim_result).collect();
    let mut messages = llm::messages(system, &trimmed);
    messages.push(json!({"role": "user", "content": SUMMARY_PROMPT}));
    let body = json!({
        "messages": messages,
        "stream": true,
        "id_slot": session.slot().unwrap_or(0),
        "cache_prompt": true,
    });
    // A summary that cannot be had (an error, or nothing written) still ends the epoch:
    // otherwise a full context would refuse every later turn.
    match llm::complete(sock, timeout, &body, |_| {}) {
        Ok(c) => c.content.filter(|t| !t.trim().is_empty()),
        Err(_) => None,
    }
    .unwrap_or_else(|| NO_SUMMARY.to_owned())
}
