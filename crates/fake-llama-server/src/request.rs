//! Parsing `POST /v1/chat/completions` bodies as leniently as llama-server: unknown fields are
//! ignored; only what the fake needs is read and checked.

use serde_json::Value;

use crate::api::ApiError;
use crate::render::{Call, Msg};

/// The parts of a chat completion request the fake uses.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The conversation.
    pub messages: Vec<Msg>,
    /// The `tools` array, as sent.
    pub tools: Vec<Value>,
    /// `stream: true`.
    pub stream: bool,
    /// `stream_options.include_usage: true`.
    pub include_usage: bool,
    /// `id_slot` when given and not -1.
    pub id_slot: Option<i64>,
    /// `max_tokens` (or `n_predict`) when given and positive.
    pub max_tokens: Option<usize>,
    /// `cache_prompt` (true unless `false`).
    pub cache_prompt: bool,
}

impl ChatRequest {
    /// Parses a request body; errors carry llama-server's status and message.
    pub fn parse(body: &[u8]) -> Result<(Self, Value), ApiError> {
        let value: Value = serde_json::from_slice(body).map_err(|e| ApiError::invalid_json(&e))?;
        let Value::Object(obj) = &value else {
            return Err(ApiError::invalid_request("'messages' is required"));
        };
        let messages = match obj.get("messages") {
            Some(Value::Array(items)) => items
                .iter()
                .map(parse_message)
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(ApiError::invalid_request("'messages' must be an array")),
            None => return Err(ApiError::invalid_request("'messages' is required")),
        };
        let tools = match obj.get("tools") {
            Some(Value::Array(items)) => items.clone(),
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return Err(ApiError::invalid_request("'tools' must be an array")),
        };
        let stream = obj.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let include_usage = obj
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let id_slot = obj
            .get("id_slot")
            .and_then(Value::as_i64)
            .filter(|&id| id != -1);
        let max_tokens = ["max_tokens", "max_completion_tokens", "n_predict"]
            .iter()
            .find_map(|k| obj.get(*k).and_then(Value::as_i64))
            .filter(|&n| n > 0)
            .and_then(|n| usize::try_from(n).ok());
        let cache_prompt = obj
            .get("cache_prompt")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let request = Self {
            messages,
            tools,
            stream,
            include_usage,
            id_slot,
            max_tokens,
            cache_prompt,
        };
        Ok((request, value))
    }
}

fn parse_message(value: &Value) -> Result<Msg, ApiError> {
    let Value::Object(obj) = value else {
        return Err(ApiError::invalid_request("each message must be an object"));
    };
    let role = match obj.get("role") {
        Some(Value::String(role)) => role.clone(),
        _ => {
            return Err(ApiError::bad_messages(&format!(
                "Missing 'role' in message: {value}"
            )));
        }
    };
    let content = content_text(obj.get("content"))?;
    let reasoning = match obj.get("reasoning_content") {
        Some(Value::String(text)) => text.clone(),
        _ => String::new(),
    };
    let tool_calls = match obj.get("tool_calls") {
        Some(Value::Array(calls)) => calls.iter().map(parse_call).collect::<Result<_, _>>()?,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(ApiError::invalid_request("'tool_calls' must be an array")),
    };
    Ok(Msg {
        role,
        content,
        reasoning,
        tool_calls,
    })
}

/// A string, null, or an array of `{"type": "text", "text": ...}` parts (joined).
fn content_text(content: Option<&Value>) -> Result<String, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(t))) => text.push_str(t),
                    _ => {
                        return Err(ApiError::invalid_request(
                            "unsupported content part: only {\"type\": \"text\"} parts",
                        ));
                    }
                }
            }
            Ok(text)
        }
        Some(_) => Err(ApiError::invalid_request(
            "'content' must be a string or an array",
        )),
    }
}

fn parse_call(value: &Value) -> Result<Call, ApiError> {
    let function = value.get("function").unwrap_or(value);
    let name = match function.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => {
            return Err(ApiError::invalid_request(
                "a tool call has no string 'name'",
            ));
        }
    };
    let arguments = match function.get("arguments") {
        Some(Value::String(text)) => text.clone(),
        // The real server renders any other JSON value and refuses a call without one.
        Some(other) => other.to_string(),
        None => {
            return Err(ApiError::bad_messages(
                "[json.exception.out_of_range.403] key 'arguments' not found",
            ));
        }
    };
    // A string must hold JSON: the real server parses it to render it.
    if let Some(e) = crate::nljson::parse_error(&arguments) {
        return Err(ApiError::unrenderable_arguments(&e));
    }
    Ok(Call { name, arguments })
}
