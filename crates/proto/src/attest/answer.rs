//! A streamed answer of llama-server (`/v1/chat/completions` with `stream: true`),
//! assembled event by event: text, reasoning, tool calls (deltas joined by index: the first
//! carries id and name, the rest only more argument bytes) and the finish reason. loopd
//! assembles the answer it acts on and inferproxy the copy it witnesses with this one code.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::ChatMessage;
use super::call::ToolCall;

/// The most an answer may bring (text, reasoning and tool arguments together, counted as
/// event data); a server that goes on past it is cut off.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The most tool calls one answer may make.
const MAX_CALLS: usize = 64;

/// The prompt-cache figures of one answer (llama-server's `timings`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Timings {
    #[serde(default)]
    pub cache_n: u64,
    #[serde(default)]
    pub prompt_n: u64,
    #[serde(default)]
    pub predicted_n: u64,
}

/// One answer, as far as it has streamed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish: Option<String>,
    pub timings: Option<Timings>,
    /// Event data taken so far.
    size: usize,
}

/// Why an event cannot be part of an answer. Its text prints what it wraps, which
/// `source()` does not return (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The answer went past [`MAX_ANSWER_BYTES`].
    #[error("the answer went past {MAX_ANSWER_BYTES} bytes")]
    TooLong,
    /// A stream event that is not a chunk.
    #[error("not a chunk ({0})")]
    NotAChunk(serde_json::Error),
    /// A chunk that carries the server's `error`.
    #[error("the server reported {0}")]
    Reported(Value),
    /// A tool-call delta whose index skips ahead (or past 64 calls).
    #[error("tool call index {index} out of order")]
    CallOutOfOrder { index: usize },
}

/// A piece of the answer as it streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    Reasoning(&'a str),
}

// The text pieces are borrowed from the event's data when they hold no escapes.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    timings: Option<Timings>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Option<DeltaMsg<'a>>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct DeltaMsg<'a> {
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    index: usize,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<FnDelta<'a>>,
}

#[derive(Deserialize)]
struct FnDelta<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
}

impl Answer {
    /// Takes one event's data (a chunk; never the `[DONE]` that ends the stream), handing
    /// each text and reasoning piece to `on_piece`.
    pub fn feed(
        &mut self,
        data: &str,
        mut on_piece: impl FnMut(Piece<'_>),
    ) -> Result<(), AnswerError> {
        self.size += data.len();
        if self.size > MAX_ANSWER_BYTES {
            return Err(AnswerError::TooLong);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(AnswerError::NotAChunk)?;
        if let Some(err) = chunk.error {
            return Err(AnswerError::Reported(err));
        }
        if chunk.timings.is_some() {
            self.timings = chunk.timings;
        }
        for choice in chunk.choices {
            if let Some(f) = choice.finish_reason {
                self.finish = Some(f);
            }
            let Some(delta) = choice.delta else { continue };
            if let Some(text) = delta.content {
                on_piece(Piece::Text(&text));
                self.content.get_or_insert_with(String::new).push_str(&text);
            }
            if let Some(text) = delta.reasoning_content {
                on_piece(Piece::Reasoning(&text));
                self.reasoning
                    .get_or_insert_with(String::new)
                    .push_str(&text);
            }
            for call in delta.tool_calls.unwrap_or_default() {
                merge_call(&mut self.tool_calls, call)?;
            }
        }
        Ok(())
    }

    /// Whether the answer ended normally (`stop` or `tool_calls`): only such an answer's
    /// calls may run.
    pub fn runnable(&self) -> bool {
        matches!(self.finish.as_deref(), Some("stop" | "tool_calls"))
    }

    /// The assistant message this answer is replayed as, every call kept.
    pub fn message(&self) -> ChatMessage {
        let calls: Vec<&ToolCall> = self.tool_calls.iter().collect();
        ChatMessage::assistant(self.content.clone(), self.reasoning.clone(), &calls)
    }
}

/// Tool-call deltas arrive per index: the first carries id and name, the rest only more
/// argument bytes, which are concatenated.
fn merge_call(calls: &mut Vec<ToolCall>, d: CallDelta) -> Result<(), AnswerError> {
    if d.index > calls.len() || d.index > MAX_CALLS {
        return Err(AnswerError::CallOutOfOrder { index: d.index });
    }
    if d.index == calls.len() {
        calls.push(ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
    }
    let call = &mut calls[d.index];
    if let Some(id) = d.id {
        call.id.push_str(&id);
    }
    if let Some(f) = d.function {
        if let Some(name) = f.name {
            call.name.push_str(&name);
        }
        if let Some(args) = f.arguments {
            call.arguments.push_str(&args);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_fragments_join_per_index() {
        let mut calls = Vec::new();
        fn d<'a>(
            index: usize,
            id: Option<&'a str>,
            name: Option<&'a str>,
            args: &'a str,
        ) -> CallDelta<'a> {
            CallDelta {
                index,
                id: id.map(Cow::Borrowed),
                function: Some(FnDelta {
                    name: name.map(Cow::Borrowed),
                    arguments: Some(Cow::Borrowed(args)),
                }),
            }
        }
        for delta in [
            d(0, Some("a"), Some("read_file"), "{"),
            d(0, None, None, "\"path\":"),
            d(1, Some("b"), Some("list_dir"), "{}"),
            d(0, None, None, "\"/x\"}"),
        ] {
            merge_call(&mut calls, delta).expect("in order");
        }
        assert_eq!(calls[0].arguments, "{\"path\":\"/x\"}");
        assert_eq!(calls[1].name, "list_dir");
        let skipped = merge_call(&mut calls, d(5, None, None, ""));
        assert!(
            matches!(skipped, Err(AnswerError::CallOutOfOrder { index: 5 })),
            "{skipped:?}"
        );
        assert_eq!(
            skipped.map_err(|e| e.to_string()),
            Err("tool call index 5 out of order".into())
        );
    }
}
