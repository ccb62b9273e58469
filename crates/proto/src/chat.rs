//! The chat channel on loop.sock, the same for `bxctl chat` and gatewayd: a user message
//! in; the turn streamed out as events (assistant text, tool calls and their outcomes,
//! pending approvals); a final reply. Only the owner's channels reach loop.sock.

use serde::{Deserialize, Serialize};

use crate::{CallId, Epoch, LogRecord, SessionId, Timestamp, ToolResponse};

/// The owner says something. Without a session, loopd starts a new one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatSend {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    pub text: String,
    /// The client's hang-up before the reply cancels the turn (Ctrl-C in `bxctl chat`).
    /// Without it a turn whose client went away runs to its end and is logged (gatewayd,
    /// whose restart must not withdraw what waits on Mattermost).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel_on_hangup: bool,
}

/// One step of a turn, streamed as it happens (never the final frame).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChatEvent {
    /// The turn runs in this session and epoch (the first event of every turn).
    Started { session: SessionId, epoch: Epoch },
    /// A piece of the assistant's answer, as the model streams it.
    Text { delta: String },
    /// A piece of the model's reasoning, when the model reasons.
    Reasoning { delta: String },
    /// The model asked for a tool; loopd has sent it to brokerd.
    ToolCall {
        call: CallId,
        tool: String,
        arguments: String,
    },
    /// brokerd's answer for a call: a pending approval first when the grant asks, then the
    /// result, failure or denial.
    ToolResponse {
        call: CallId,
        response: ToolResponse,
    },
    /// The context was full: the epoch ended with a summary and the next one began.
    Compacted { next: Epoch },
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "snake_case", deny_unknown_fields)]
pub enum TurnEnd {
    /// The model answered without asking for more tools.
    Answered,
    /// The per-turn cap on tool calls was reached; the model was not asked again.
    ToolCap { calls: u32 },
    /// The model could not be reached or broke off; the session is intact and the next
    /// message continues it.
    ModelError { detail: String },
    /// The owner's client hung up mid-turn (Ctrl-C): a call waiting for approval was
    /// withdrawn, a tool already running finished and its result is logged, and the model
    /// was not asked again. The next message continues the session.
    Cancelled,
    /// The answer did not end normally (`finish` is the server's `finish_reason`, `length`
    /// when `max_tokens` cut it): its text is kept, its `withdrawn` tool calls were not run.
    /// The session goes on.
    Cut { finish: String, withdrawn: u32 },
}

impl TurnEnd {
    /// How every channel words a cut, after "The answer ": "was cut off (`finish`)", then
    /// how many tool calls were not run, when any were. `finish` comes as the channel shows
    /// it (inert, quoted): it is the server's word.
    pub fn cut_words(finish: &str, withdrawn: u32) -> String {
        match withdrawn {
            0 => format!("was cut off ({finish})"),
            1 => format!("was cut off ({finish}); its tool call was not run"),
            n => format!("was cut off ({finish}); its {n} tool calls were not run"),
        }
    }
}

/// The final frame of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatReply {
    pub session: SessionId,
    /// The assistant's whole answer of this turn (empty when it ended otherwise).
    pub text: String,
    pub end: TurnEnd,
}

/// One session, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSummary {
    pub session: SessionId,
    pub epoch: Epoch,
    pub started: Timestamp,
    pub last: Timestamp,
    /// Owner messages in the current epoch.
    pub turns: u32,
    /// Owner messages over every epoch of the session (absent from an older loopd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_turns: Option<u32>,
    /// The session's first owner message, at most [`MAX_PREVIEW`] characters (longer
    /// ones end in `…`): the owner's own words, shown inert all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

/// The longest [`SessionSummary::preview`] kept, in characters.
pub const MAX_PREVIEW: usize = 80;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionListing {
    pub sessions: Vec<SessionSummary>,
}

/// Asks for a session's log (the current epoch unless one is named).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionShow {
    pub session: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<Epoch>,
}

/// A session's log records; the oldest are left out (`truncated`) past the frame limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRecords {
    pub session: SessionId,
    pub epoch: Epoch,
    pub records: Vec<LogRecord>,
    pub truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::TurnEnd;

    #[test]
    fn a_cut_counts_the_calls_not_run_only_when_there_are_any() {
        assert_eq!(TurnEnd::cut_words("length", 0), "was cut off (length)");
        assert_eq!(
            TurnEnd::cut_words("length", 1),
            "was cut off (length); its tool call was not run"
        );
        assert_eq!(
            TurnEnd::cut_words("`length`", 3),
            "was cut off (`length`); its 3 tool calls were not run"
        );
    }
}
