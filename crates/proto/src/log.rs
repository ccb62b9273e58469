use serde::{Deserialize, Serialize};

use crate::attest::{AnswerWitness, ToolCall};
use crate::{CallId, DataClass, DenyReason, Epoch, Hash32, SessionId, Timestamp};

/// One line of `sessions/<id>/<epoch>.jsonl`, internally tagged: `{"type":"user",…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum LogRecord {
    SessionStart {
        time: Timestamp,
        session: SessionId,
        epoch: Epoch,
        slot: u32,
        baseline: Hash32,
    },
    User {
        time: Timestamp,
        content: String,
    },
    /// The fields the chat template reads, exactly as the server returned them, so that a
    /// replay renders the same prompt and the server's cache stays warm.
    Assistant {
        time: Timestamp,
        content: Option<String>,
        reasoning_content: Option<String>,
        tool_calls: Vec<ToolCall>,
        /// The completion inferproxy witnessed this answer as, and each kept call's index in
        /// it: what a tool request names. Absent in records written before witnessing: their
        /// calls never run (an interrupted one gets its `failed` result, as every
        /// interrupted call does).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        witness: Option<AnswerWitness>,
    },
    ToolResult {
        time: Timestamp,
        call: CallId,
        tool_call_id: String,
        content: String,
        class: DataClass,
        untrusted: bool,
        truncated: bool,
        /// How the call ended when it did not run: denied (and why), or failed. Absent for
        /// a result, and in records written before it existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<CallOutcome>,
    },
    /// The session's request reused fewer of the tokens its slot held than the previous
    /// answer left (`expected`): `got`.
    CacheLoss {
        time: Timestamp,
        expected: u64,
        got: u64,
        /// The slot served another session's request since this session's previous one
        /// (loopd pins sessions to slots by a hash of their id, so two may share one): that
        /// request may have evicted the cache, which then says nothing of the template.
        /// Absent when false, and in records written before loopd counted.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        shared: bool,
    },
    EpochEnd {
        time: Timestamp,
        next: Epoch,
        summary: String,
    },
    /// Tool calls the model asked for that are never run and never sent back to the server:
    /// those of an answer that did not end normally (`cut`, not in the `assistant` record
    /// before it), or calls of earlier `assistant` records that the server cannot render
    /// (`unrenderable`, arguments that are not JSON: those calls and their results are left
    /// out of every later request). The log is never rewritten; this record is how it is
    /// repaired.
    Withdrawn {
        time: Timestamp,
        cause: Withdrawal,
        /// For the owner: the finish reason, or what made the calls unrenderable.
        detail: String,
        calls: Vec<ToolCall>,
    },
}

/// Why tool calls were withdrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Withdrawal {
    /// The answer ended otherwise than `stop` or `tool_calls` (`length`: `max_tokens` cut it).
    Cut,
    /// Their arguments are not JSON, so the server refuses to render the history.
    Unrenderable,
}

/// A tool call that gave no result: what the owner is shown instead of the text the model
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CallOutcome {
    Denied { reason: DenyReason },
    Failed,
}
