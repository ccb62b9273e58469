//! Compaction: when the context is nearly full, the epoch ends with a summary the local
//! model writes, and the next epoch starts from it. This is how the summary is had; the
//! turn ends the epoch with it.
//!
//! The summary request continues the epoch's own prompt: the same system prompt, tools and
//! messages, then the instruction, so the server re-processes only the instruction. It is
//! capped ([`cap`]), asked with `tool_choice: "none"` (the real server still renders the
//! tools, so the prefix stays shared), and its finish reason is checked: a cut summary is
//! asked again, shorter. A history that no longer fits the context cannot be continued as
//! is: the summary is then asked of the epoch with every tool result cut short, which
//! re-processes it all; if that fails too, the next epoch starts from [`NO_SUMMARY`].

use std::path::Path;
use std::time::Duration;

use proto::LogRecord;
use serde_json::{Value, json};

use crate::llm::{self, LlmError};
use crate::prompt;
use crate::store::Session;

use proto::composed::{SHORT_PROMPT, SUMMARY_PROMPT};

/// The summary when the model could not write one.
pub use proto::composed::NO_SUMMARY;

/// The most tokens a summary may take: an eighth of the context (so the next epoch starts
/// at most that full, plus the system prompt), and never more than `loop.max_tokens`.
/// `loop.compact_percent` is at most 80, so at the threshold a fifth of the context is left
/// for the instruction and this cap.
pub fn cap(n_ctx: u64, max_tokens: u32) -> u32 {
    let eighth = u32::try_from(n_ctx / 8).unwrap_or(u32::MAX).max(16);
    eighth.min(max_tokens)
}

fn trim_result(mut r: LogRecord) -> LogRecord {
    if let LogRecord::ToolResult {
        content, truncated, ..
    } = &mut r
        && let Some(cut) = proto::composed::trimmed(content)
    {
        *content = cut;
        *truncated = true;
    }
    r
}

/// Words in a row of the instruction that an answer repeating it has.
const ECHO_RUN: usize = 4;

/// Words of its own (not in the instruction) that an answer repeating the instruction needs
/// to count as a summary all the same.
const MIN_NEW_WORDS: usize = 6;

/// Lower-cased words: runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `answer` gives the instruction back instead of a summary: it repeats
/// [`ECHO_RUN`] of the instruction's words in a row, and has fewer than [`MIN_NEW_WORDS`]
/// words that are neither the instruction's nor [`NO_SUMMARY`]'s (loopd's own words for a
/// summary that could not be had, which an epoch may start from and a small model then
/// repeats after the instruction: llama.cpp's server with SmolLM2 did). A summary that
/// starts by quoting the instruction and goes on to say what happened is kept.
pub fn echoes(instruction: &str, answer: &str) -> bool {
    let own = words(instruction);
    let placeholder = words(NO_SUMMARY);
    let said = words(answer);
    let repeats = own
        .windows(ECHO_RUN)
        .any(|run| said.windows(ECHO_RUN).any(|w| w == run));
    let new = said
        .iter()
        .filter(|w| !own.contains(w) && !placeholder.contains(w))
        .count();
    repeats && new < MIN_NEW_WORDS
}

/// Words in a row of the instruction that make a sentence of an answer the instruction given
/// back, dropped from a summary kept ([`without_echo`]): more than [`ECHO_RUN`], so that a
/// summary's own sentence sharing a few of the instruction's words ("the owner's requests")
/// stays.
const ECHO_SENTENCE: usize = 6;

/// `answer` without its sentences (up to `.`, `!`, `?`, `:` or a line break) that repeat
/// [`ECHO_SENTENCE`] of the instruction's words in a row: a summary that starts by quoting
/// the instruction keeps what it goes on to say, and no epoch starts from the instruction
/// (llama.cpp's server with SmolLM2 gave it back, then a line of its own, twice).
pub fn without_echo(instruction: &str, answer: &str) -> String {
    let own = words(instruction);
    let echoed = |sentence: &str| {
        let said = words(sentence);
        own.windows(ECHO_SENTENCE)
            .any(|run| said.windows(ECHO_SENTENCE).any(|w| w == run))
    };
    let mut kept = String::new();
    let mut start = 0;
    for (at, c) in answer.char_indices() {
        if matches!(c, '.' | '!' | '?' | ':' | '\n') {
            let end = at + c.len_utf8();
            if !echoed(&answer[start..end]) {
                kept.push_str(&answer[start..end]);
            }
            start = end;
        }
    }
    if !echoed(&answer[start..]) {
        kept.push_str(&answer[start..]);
    }
    kept.trim().to_owned()
}

/// What one summary request gave.
enum Asked {
    /// A summary that ended normally (`stop`) with text.
    Written(String),
    /// The request does not fit the context, or the server cannot render the history.
    Overflow,
    /// The model could not be asked at all (unreachable, loading): try at a later turn.
    Unreachable,
    /// Cut by its cap, empty, or ended otherwise (a tool call is never run).
    Unusable,
}

/// Where a summary is asked: the model server, and what counts each request just before
/// it is sent to the session's slot (`slots::Sent`: a retry evicts another session's cache
/// as the first ask does).
pub struct Server<'a> {
    pub sock: &'a Path,
    pub timeout: Duration,
    /// Takes the session's slot for one request and counts it (`slots::Sent::take`): the
    /// slot is the request's until what it returns drops; `None`: the slot stayed busy past
    /// a request's time limit.
    pub counted: &'a dyn Fn() -> Option<crate::slots::OnSlot<'a>>,
}

/// Asks for a summary: `messages` then `instruction`, capped at `cap` tokens.
fn ask(
    server: &Server<'_>,
    mut messages: Vec<Value>,
    instruction: &str,
    slot: u32,
    cap: u32,
    tools: &Value,
) -> Asked {
    messages.push(proto::composed::instruction(instruction).to_value());
    let mut body = prompt::body(messages, slot, cap, tools);
    body["tool_choice"] = json!("none");
    let Some(_on_slot) = (server.counted)() else {
        return Asked::Unreachable;
    };
    match llm::complete(server.sock, server.timeout, &body, None, |_| {}) {
        Ok(c) => match (c.answer.finish.as_deref(), c.answer.content) {
            // The instruction given back is no summary (llama.cpp's server with a small
            // model did that at temperature 0): asked again, as a cut one is. A summary
            // quoting it is kept without the quote.
            (Some("stop"), Some(t)) => match without_echo(instruction, &t) {
                t if !t.is_empty() && !echoes(instruction, &t) => Asked::Written(t),
                _ => Asked::Unusable,
            },
            _ => Asked::Unusable,
        },
        Err(e) if e.context_full() || e.unrenderable() => Asked::Overflow,
        Err(
            LlmError::Connect { .. }
            | LlmError::Deadline(_)
            | LlmError::Request(_)
            | LlmError::Status { status: 503, .. },
        ) => Asked::Unreachable,
        Err(_) => Asked::Unusable,
    }
}

/// The summary the model writes of `session` (its system prompt `system`), for the next
/// epoch to start from; `None` when the model cannot be reached now (the epoch goes on
/// and a later turn tries again). `n_ctx` is the server's context, `max_tokens` loopd's cap
/// on an answer.
pub fn summary(
    server: &Server<'_>,
    system: &str,
    session: &Session,
    n_ctx: u64,
    max_tokens: u32,
    tools: &Value,
) -> Option<String> {
    let slot = session.slot().unwrap_or(0);
    let cap = cap(n_ctx, max_tokens);
    let epoch = prompt::messages(system, session.summary.as_deref(), &session.records);
    match ask(server, epoch.clone(), SUMMARY_PROMPT, slot, cap, tools) {
        Asked::Written(t) => return Some(t),
        Asked::Unreachable => return None,
        Asked::Unusable => {
            // The same prefix again: only the shorter instruction is new.
            if let Asked::Written(t) = ask(server, epoch, SHORT_PROMPT, slot, cap / 4, tools) {
                return Some(t);
            }
        }
        Asked::Overflow => {
            // Tool results are what fills a context; cut short, the rest may fit.
            let trimmed: Vec<LogRecord> =
                session.records.iter().cloned().map(trim_result).collect();
            let messages = prompt::messages(system, session.summary.as_deref(), &trimmed);
            if let Asked::Written(t) = ask(server, messages, SUMMARY_PROMPT, slot, cap, tools) {
                return Some(t);
            }
        }
    }
    // A summary that cannot be had still ends the epoch: otherwise a full context (or a
    // history the server refuses) would refuse every later turn.
    Some(NO_SUMMARY.to_owned())
}

#[cfg(test)]
mod tests {
    use super::{NO_SUMMARY, echoes, without_echo};
    use proto::composed::{SHORT_PROMPT, SUMMARY_PROMPT};

    #[test]
    fn the_instruction_given_back_is_no_summary() {
        assert!(echoes(SHORT_PROMPT, SHORT_PROMPT));
        // What llama.cpp's server with SmolLM2 answered at temperature 0 (the real-peer
        // tier's `realpeer_summary`), twice.
        assert!(echoes(
            SUMMARY_PROMPT,
            "The conversation is about to be cut short. Write a concise summary of everything \
             above that you will need to continue: the owner's requests, facts learned, \
             decisions taken, open tasks."
        ));
        // What it answered in the gate's real-peer tier when the epoch had started from
        // NO_SUMMARY: the instruction, then the placeholder it was given.
        assert!(echoes(
            SUMMARY_PROMPT,
            "The conversation is about to be cut short. Write a concise summary of everything \
             above that you will need to continue:\n(The earlier part of this conversation \
             could not be summarised; ask the owner for anything needed from it.)"
        ));
        for echo in [
            SUMMARY_PROMPT,
            "The conversation is about to be cut short.",
            "Write a concise summary of everything above that you will need to continue.",
            "Summary: write only the summary, as plain text.",
            "  the conversation is ABOUT TO BE CUT short!! ",
        ] {
            assert!(echoes(SUMMARY_PROMPT, echo), "{echo}");
        }
        for summary in [
            "The owner asked for the todo list and the shopping list; the milk is still to buy.",
            "The conversation is about to be cut short. The owner asked for trip.md: a train \
             to Lyon on the 14th, and the hotel Bellecour.",
            "Owner wants notes read.",
            "Open tasks: call the plumber.",
            // The placeholder alone is not the instruction given back.
            NO_SUMMARY,
        ] {
            assert!(!echoes(SUMMARY_PROMPT, summary), "{summary}");
        }
    }

    /// A summary that quotes the instruction keeps what it goes on to say, without the quote
    /// (what llama.cpp's server with SmolLM2 answered in the gate's real-peer tier: the
    /// instruction, then a line of its own, twice); one that is only the instruction keeps
    /// nothing; one sharing a few of its words keeps them.
    #[test]
    fn a_summary_quoting_the_instruction_is_kept_without_the_quote() {
        let real = "The conversation is about to be cut short. Write a concise summary of \
                    everything above that you will need to continue. The conversation ends \
                    with a request to create a new session with the specified path and \
                    contents. The conversation ends with a request to create a new session \
                    with the specified path and contents.";
        let kept = without_echo(SUMMARY_PROMPT, real);
        assert_eq!(
            kept,
            "The conversation ends with a request to create a new session with the specified \
             path and contents. The conversation ends with a request to create a new session \
             with the specified path and contents."
        );
        assert!(!echoes(SUMMARY_PROMPT, &kept));
        assert_eq!(without_echo(SUMMARY_PROMPT, SUMMARY_PROMPT), "");
        assert_eq!(
            without_echo(
                SUMMARY_PROMPT,
                "The conversation is about to be cut short. The owner asked for trip.md."
            ),
            "The owner asked for trip.md."
        );
        let own = "Open tasks: the owner's requests for the milk are still open.";
        assert_eq!(without_echo(SUMMARY_PROMPT, own), own);
    }

    #[test]
    fn the_cap_is_an_eighth_of_the_context_and_at_most_max_tokens() {
        assert_eq!(super::cap(2048, 2048), 256);
        assert_eq!(super::cap(2048, 100), 100);
        assert_eq!(super::cap(64, 2048), 16, "never below 16 tokens");
    }
}
