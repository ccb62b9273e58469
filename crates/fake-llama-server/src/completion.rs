//! The reply to a chat completion and its JSON: one `chat.completion` object, or the
//! `chat.completion.chunk` events of a stream, in the real server's shapes.

use serde_json::{Value, json};

use crate::render::{self, Call, Msg};
use crate::script::Answer;

/// What the fake "generated".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// `content`.
    pub content: String,
    /// Explicit stream pieces of the content (empty: split automatically).
    pub chunks: Vec<String>,
    /// `reasoning_content` (empty: none).
    pub reasoning: String,
    /// Tool calls with their ids.
    pub tool_calls: Vec<(String, Call)>,
    /// `finish_reason`.
    pub finish_reason: String,
    /// What was generated when `max_tokens` cut a reply with tool calls: the rendered body
    /// up to the cut (what the slot caches), which no whole message renders to.
    pub cut_body: Option<String>,
}

impl Reply {
    /// Builds the reply an answer gives for `messages`, cut to `max_tokens`. `new_id` makes
    /// tool call ids. A reply with tool calls is cut as the real server cuts one: its
    /// rendered body ends after `max_tokens` tokens, and the call being written then has
    /// the arguments generated so far (mid-string, not JSON); calls not begun are dropped.
    pub fn from_answer(
        answer: &Answer,
        messages: &[Msg],
        max_tokens: Option<usize>,
        new_id: &mut dyn FnMut() -> String,
    ) -> Self {
        let last_user = messages
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map_or("", |m| m.content.as_str());
        let substituted = answer
            .text
            .as_ref()
            .map(|t| t.replace("{last_user}", last_user));
        let mut content = substituted
            .clone()
            .or_else(|| answer.chunks.as_ref().map(|c| c.concat()))
            .unwrap_or_default();
        let mut chunks = match (&answer.chunks, &answer.text) {
            (Some(chunks), Some(text)) if substituted.as_deref() == Some(text.as_str()) => {
                chunks.clone()
            }
            (Some(chunks), None) => chunks.clone(),
            _ => Vec::new(),
        };
        let mut reasoning = answer.reasoning.clone().unwrap_or_default();
        let tool_calls: Vec<(String, Call)> = answer
            .tool_calls
            .iter()
            .map(|c| {
                let id = c.id.clone().unwrap_or_else(&mut *new_id);
                (
                    id,
                    Call {
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    },
                )
            })
            .collect();
        let mut cut = false;
        if let (Some(max), true) = (max_tokens, tool_calls.is_empty()) {
            let reasoning_tokens = render::token_count(reasoning.len());
            if reasoning_tokens > max {
                reasoning = render::truncate_to_tokens(&reasoning, max).to_owned();
                content.clear();
                cut = true;
            } else if reasoning_tokens + render::token_count(content.len()) > max {
                content = render::truncate_to_tokens(&content, max - reasoning_tokens).to_owned();
                cut = true;
            }
            if cut {
                chunks.clear();
            }
        }
        let mut reply = Self {
            content,
            chunks,
            reasoning,
            tool_calls,
            finish_reason: String::new(),
            cut_body: None,
        };
        if let (Some(max), false) = (max_tokens, reply.tool_calls.is_empty()) {
            cut = reply.cut_calls(max);
        }
        reply.finish_reason = answer.finish_reason.clone().unwrap_or_else(|| {
            if cut {
                "length"
            } else if reply.tool_calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
            .to_owned()
        });
        reply
    }

    /// Cuts a reply with tool calls after `max` tokens of its rendered body; whether it cut.
    fn cut_calls(&mut self, max: usize) -> bool {
        let body = render::render_body(&self.as_message());
        if render::token_count(body.len()) <= max {
            return false;
        }
        let kept = render::truncate_to_tokens(&body, max).len();
        // The body is built piece by piece as render_body builds it, to see where the cut
        // falls: in the reasoning, in the text, in a call's head (the call is dropped) or
        // in its arguments (they end there).
        let calls = std::mem::take(&mut self.tool_calls);
        let think = if self.reasoning.is_empty() {
            0
        } else {
            "<think>\n".len() + self.reasoning.len() + "\n</think>\n".len()
        };
        if kept <= think {
            let room = kept.saturating_sub("<think>\n".len());
            self.reasoning = prefix(&self.reasoning, room);
            self.content.clear();
        } else if kept <= think + self.content.len() {
            self.content = prefix(&self.content, kept - think);
        } else {
            let mut upto = self.as_message();
            for (id, call) in calls {
                upto.tool_calls.push(Call {
                    name: call.name.clone(),
                    arguments: String::new(),
                });
                let args_at = render::render_body(&upto).len() - "}\n</tool_call>".len();
                if args_at > kept {
                    break;
                }
                let arguments = prefix(&call.arguments, kept - args_at);
                let whole = arguments.len() == call.arguments.len();
                if let Some(last) = upto.tool_calls.last_mut() {
                    last.arguments.clone_from(&arguments);
                }
                self.tool_calls.push((id, Call { arguments, ..call }));
                if !whole {
                    break;
                }
            }
        }
        self.chunks.clear();
        self.cut_body = Some(body[..kept].to_owned());
        true
    }

    /// What the "model" generated, as the slot caches it after the prompt.
    pub fn generated(&self) -> String {
        self.cut_body
            .clone()
            .unwrap_or_else(|| render::render_body(&self.as_message()))
    }

    /// The reply as the assistant message the template renders (what the slot caches).
    pub fn as_message(&self) -> Msg {
        Msg {
            role: "assistant".into(),
            content: self.content.clone(),
            reasoning: self.reasoning.clone(),
            tool_calls: self.tool_calls.iter().map(|(_, c)| c.clone()).collect(),
        }
    }
}

/// The fields every completion object and chunk carries.
#[derive(Debug, Clone)]
pub struct Meta {
    /// `chatcmpl-...`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model path.
    pub model: String,
    /// `system_fingerprint` (the build info).
    pub fingerprint: String,
}

/// Token counts of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// All prompt tokens.
    pub prompt_tokens: usize,
    /// Prompt tokens reused from the slot's cache.
    pub cache_n: usize,
    /// Prompt tokens evaluated.
    pub prompt_n: usize,
    /// Generated tokens.
    pub predicted_n: usize,
}

/// Simulated speeds: 0.5 ms per prompt token, 5 ms per generated token.
const PROMPT_MS_PER_TOKEN: f64 = 0.5;
const PREDICTED_MS_PER_TOKEN: f64 = 5.0;

#[allow(
    clippy::cast_precision_loss,
    reason = "token counts are far below 2^52"
)]
fn timings(c: Counts) -> Value {
    let prompt_ms = c.prompt_n as f64 * PROMPT_MS_PER_TOKEN;
    let predicted_ms = c.predicted_n as f64 * PREDICTED_MS_PER_TOKEN;
    let per = |ms: f64, n: usize| if n == 0 { 0.0 } else { ms / n as f64 };
    let rate = |ms: f64, n: usize| if ms == 0.0 { 0.0 } else { 1e3 * n as f64 / ms };
    json!({
        "cache_n": c.cache_n,
        "prompt_n": c.prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": per(prompt_ms, c.prompt_n),
        "prompt_per_second": rate(prompt_ms, c.prompt_n),
        "predicted_n": c.predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": per(predicted_ms, c.predicted_n),
        "predicted_per_second": rate(predicted_ms, c.predicted_n),
    })
}

fn usage(c: Counts) -> Value {
    json!({
        "completion_tokens": c.predicted_n,
        "prompt_tokens": c.prompt_tokens,
        "total_tokens": c.prompt_tokens + c.predicted_n,
        "prompt_tokens_details": { "cached_tokens": c.cache_n },
    })
}

fn envelope(meta: &Meta, object: &str, choices: Value) -> serde_json::Map<String, Value> {
    let mut map = serde_json::Map::new();
    map.insert("choices".into(), choices);
    map.insert("created".into(), meta.created.into());
    map.insert("id".into(), meta.id.clone().into());
    map.insert("model".into(), meta.model.clone().into());
    map.insert("system_fingerprint".into(), meta.fingerprint.clone().into());
    map.insert("object".into(), object.into());
    map
}

/// The non-streaming `chat.completion` object.
pub fn completion(meta: &Meta, reply: &Reply, counts: Counts) -> Value {
    let mut message = serde_json::Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert("content".into(), reply.content.clone().into());
    if !reply.reasoning.is_empty() {
        message.insert("reasoning_content".into(), reply.reasoning.clone().into());
    }
    if !reply.tool_calls.is_empty() {
        let calls: Vec<Value> = reply
            .tool_calls
            .iter()
            .map(|(id, c)| {
                json!({ "type": "function",
                        "function": { "name": c.name, "arguments": c.arguments }, "id": id })
            })
            .collect();
        message.insert("tool_calls".into(), calls.into());
    }
    let choice = json!([{ "finish_reason": reply.finish_reason, "index": 0, "message": message }]);
    let mut map = envelope(meta, "chat.completion", choice);
    map.insert("usage".into(), usage(counts));
    map.insert("timings".into(), timings(counts));
    Value::Object(map)
}

/// The JSON payloads of a stream, in order; the caller sends each as `data: {json}` and ends
/// with `data: [DONE]`.
pub fn stream_events(
    meta: &Meta,
    reply: &Reply,
    counts: Counts,
    include_usage: bool,
    chunk_chars: usize,
) -> Vec<Value> {
    let delta = |d: Value| {
        let choice = json!([{ "finish_reason": null, "index": 0, "delta": d }]);
        Value::Object(envelope(meta, "chat.completion.chunk", choice))
    };
    let mut events = vec![delta(json!({ "role": "assistant", "content": null }))];
    for piece in render::split_chars(&reply.reasoning, chunk_chars) {
        events.push(delta(json!({ "reasoning_content": piece })));
    }
    let content_pieces = if reply.chunks.is_empty() {
        render::split_chars(&reply.content, chunk_chars)
    } else {
        reply.chunks.clone()
    };
    for piece in content_pieces {
        events.push(delta(json!({ "content": piece })));
    }
    for (index, (id, call)) in reply.tool_calls.iter().enumerate() {
        let mut pieces = render::split_chars(&call.arguments, chunk_chars).into_iter();
        let first = pieces.next().unwrap_or_default();
        events.push(delta(json!({ "tool_calls": [{
            "index": index, "id": id, "type": "function",
            "function": { "name": call.name, "arguments": first }
        }]})));
        for piece in pieces {
            events.push(delta(json!({ "tool_calls": [{
                "index": index, "function": { "arguments": piece }
            }]})));
        }
    }
    let finish = json!([{ "finish_reason": reply.finish_reason, "index": 0, "delta": {} }]);
    let mut last = envelope(meta, "chat.completion.chunk", finish);
    if include_usage {
        events.push(Value::Object(last));
        let mut usage_event = envelope(meta, "chat.completion.chunk", json!([]));
        usage_event.insert("usage".into(), usage(counts));
        usage_event.insert("timings".into(), timings(counts));
        events.push(Value::Object(usage_event));
    } else {
        last.insert("timings".into(), timings(counts));
        events.push(Value::Object(last));
    }
    events
}

/// The first `bytes` bytes of `text` at most, cut back to a character boundary.
fn prefix(text: &str, bytes: usize) -> String {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}
