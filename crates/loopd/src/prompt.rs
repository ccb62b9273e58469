//! The messages for the model, built from the session log: the system prompt, the previous
//! epoch's summary in a message of its own, then every record of the epoch, with assistant
//! turns exactly as the server returned them, except tool calls a `withdrawn` record left
//! out (and their results): the server could not render them.

use proto::attest::ChatMessage;
use proto::composed;
use proto::{LogRecord, ToolCall, Withdrawal};
use serde_json::{Value, json};

/// The messages an epoch starts from: the system prompt and, after the first epoch, the
/// summary the model wrote of the one before. The summary is a message of its own after
/// the system message, not part of it, because chat templates render the tool signatures
/// right after the system text: a summary inside it would push them, and everything
/// cached after them, out of the server's prompt cache (docs/decisions.md L18). It is an
/// assistant message: the model wrote it, and it may quote what tools read.
pub fn start(system: &str, summary: Option<&str>) -> Vec<Value> {
    let mut out = vec![composed::system(system).to_value()];
    if let Some(summary) = summary {
        out.push(composed::summary(summary).to_value());
    }
    out
}

/// The tool calls of `records` that are not JSON and not yet withdrawn: the server would
/// refuse to render the history with them ("Failed to parse tool call arguments as JSON").
pub fn unrenderable(records: &[LogRecord]) -> Vec<ToolCall> {
    let withdrawn = withdrawn(records);
    records
        .iter()
        .filter_map(|r| match r {
            LogRecord::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .filter(|c| !is_json(&c.arguments) && !withdrawn.contains(c))
        .cloned()
        .collect()
}

pub use composed::is_json;

fn withdrawn(records: &[LogRecord]) -> Vec<&ToolCall> {
    records
        .iter()
        .filter_map(|r| match r {
            LogRecord::Withdrawn {
                cause: Withdrawal::Unrenderable,
                calls,
                ..
            } => Some(calls),
            _ => None,
        })
        .flatten()
        .collect()
}

/// A streamed chat request on the session's slot with every tool offered (`tools`, as
/// brokerd gave them: boxmaker's own and the pinned MCP tools): the turn's and the
/// summary's (which adds `tool_choice: "none"`, which leaves the rendered prompt as it is)
/// share everything that is rendered, so the summary continues the epoch's cache.
pub fn body(messages: Vec<Value>, slot: u32, max_tokens: u32, tools: &Value) -> Value {
    json!({
        "messages": messages,
        "tools": tools,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": max_tokens,
        "id_slot": slot,
        "cache_prompt": true,
    })
}

/// The whole request's messages: [`start`], then the epoch's records.
pub fn messages(system: &str, summary: Option<&str>, records: &[LogRecord]) -> Vec<Value> {
    let mut out = start(system, summary);
    let withdrawn = withdrawn(records);
    // The ids of withdrawn calls: their results are left out with them.
    let mut dropped: Vec<&str> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        match r {
            LogRecord::User { content, .. } => {
                out.push(ChatMessage::user(content.as_str()).to_value())
            }
            LogRecord::Assistant {
                content,
                reasoning_content,
                tool_calls,
                ..
            } => {
                let (gone, kept): (Vec<&ToolCall>, Vec<&ToolCall>) =
                    tool_calls.iter().partition(|c| withdrawn.contains(c));
                dropped.extend(gone.iter().map(|c| c.id.as_str()));
                // An answer left with nothing once its calls are withdrawn (here, or cut:
                // the `withdrawn` record right after it) is not sent at all: an empty
                // assistant turn teaches a small model to answer nothing, and the cache is
                // lost from there anyway (the slot holds the tokens of the withdrawn call).
                let cut = matches!(
                    records.get(i + 1),
                    Some(LogRecord::Withdrawn {
                        cause: Withdrawal::Cut,
                        ..
                    })
                );
                let withdrew = cut || !gone.is_empty();
                if let Some(m) =
                    composed::replay(content.clone(), reasoning_content.clone(), &kept, withdrew)
                {
                    out.push(m.to_value());
                }
            }
            LogRecord::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                if !dropped.contains(&tool_call_id.as_str()) {
                    out.push(ChatMessage::tool(tool_call_id.as_str(), content.as_str()).to_value());
                }
            }
            LogRecord::SessionStart { .. }
            | LogRecord::CacheLoss { .. }
            | LogRecord::EpochEnd { .. }
            | LogRecord::Withdrawn { .. } => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{CallId, DataClass, Timestamp};

    fn t() -> Timestamp {
        Timestamp::from_millis(0).expect("time")
    }

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: arguments.into(),
        }
    }

    fn result(id: &str) -> LogRecord {
        LogRecord::ToolResult {
            time: t(),
            call: CallId(1),
            tool_call_id: id.into(),
            content: "note".into(),
            class: DataClass::Private,
            untrusted: false,
            truncated: false,
            outcome: None,
        }
    }

    #[test]
    fn assistant_turns_are_replayed_exactly_as_returned() {
        let records = vec![
            LogRecord::User {
                time: t(),
                content: "hi".into(),
            },
            LogRecord::Assistant {
                time: t(),
                content: None,
                reasoning_content: Some("think".into()),
                tool_calls: vec![call("xffiZ", "{\"path\": \"/n\"}")],
                witness: None,
            },
            result("xffiZ"),
            LogRecord::CacheLoss {
                time: t(),
                expected: 1,
                got: 0,
                shared: false,
            },
        ];
        let m = messages("sys", None, &records);
        assert_eq!(
            m.len(),
            4,
            "system, user, assistant, tool; CacheLoss is not a message"
        );
        assert_eq!(m[2]["content"], Value::Null);
        assert_eq!(m[2]["reasoning_content"], "think");
        // The arguments text goes back byte for byte, spaces included.
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            "{\"path\": \"/n\"}"
        );
        assert_eq!(m[3]["tool_call_id"], "xffiZ");
    }

    #[test]
    fn the_summary_is_a_message_of_its_own_after_the_system_prompt() {
        let m = messages("sys", Some("the owner likes tea"), &[]);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(m[1]["role"], "assistant");
        assert_eq!(
            m[1]["content"],
            "Summary of the conversation so far:\nthe owner likes tea"
        );
    }

    #[test]
    fn withdrawn_calls_and_their_results_are_left_out_and_the_rest_stays() {
        let bad = call("b", "{\"path\": \"/no");
        let good = call("g", "{\"path\": \"/n\"}");
        let mut records = vec![
            LogRecord::Assistant {
                time: t(),
                content: Some("x".into()),
                reasoning_content: None,
                tool_calls: vec![good.clone(), bad.clone()],
                witness: None,
            },
            result("g"),
            result("b"),
        ];
        assert_eq!(unrenderable(&records), vec![bad.clone()]);
        records.push(LogRecord::Withdrawn {
            time: t(),
            cause: Withdrawal::Unrenderable,
            detail: "not JSON".into(),
            calls: vec![bad],
        });
        assert!(unrenderable(&records).is_empty(), "withdrawn once only");
        let m = messages("sys", None, &records);
        assert_eq!(m.len(), 3, "{m:?}");
        let calls = m[1]["tool_calls"].as_array().expect("calls");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0]["id"], "g");
        assert_eq!(m[2]["tool_call_id"], "g");
    }

    #[test]
    fn an_answer_left_empty_by_its_withdrawn_calls_is_not_sent() {
        let bad = call("b", "{\"path\": \"/no");
        let user = |text: &str| LogRecord::User {
            time: t(),
            content: text.into(),
        };
        let empty = |calls: Vec<ToolCall>| LogRecord::Assistant {
            time: t(),
            content: None,
            reasoning_content: None,
            tool_calls: calls,
            witness: None,
        };
        let withdrawn = |cause, calls| LogRecord::Withdrawn {
            time: t(),
            cause,
            detail: String::new(),
            calls,
        };
        let records = vec![
            // An older loopd's poisoned call, repaired.
            user("a"),
            empty(vec![bad.clone()]),
            result("b"),
            withdrawn(Withdrawal::Unrenderable, vec![bad.clone()]),
            // A cut answer: no calls logged, the cut one in the record after it.
            user("b"),
            empty(vec![]),
            withdrawn(Withdrawal::Cut, vec![bad]),
            // An answer that was empty of itself is replayed as it was.
            user("c"),
            empty(vec![]),
        ];
        let roles: Vec<Value> = messages("sys", None, &records)
            .iter()
            .map(|m| m["role"].clone())
            .collect();
        assert_eq!(roles, ["system", "user", "user", "user", "assistant"]);
    }

    #[test]
    fn any_json_value_is_renderable_and_a_cut_object_is_not() {
        for ok in ["{}", "[1]", "\"s\"", " {\"a\": 1} "] {
            assert!(is_json(ok), "{ok}");
        }
        for bad in ["", "{\"a\": \"b", "{\"a\":", "not json", "{} {}"] {
            assert!(!is_json(bad), "{bad}");
        }
    }
}
