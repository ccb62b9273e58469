//! The canonical form of a chat message (docs/decisions.md W2): one JSON object with only
//! `role`, `content` (string or null), `reasoning_content` (optional), `tool_calls`
//! (assistant only) and `tool_call_id` (tool only, and required there). Its canonical bytes
//! are the object re-serialised with keys sorted at every level, no whitespace and
//! serde_json's string escaping; its digest is SHA-256 of those bytes. loopd builds every
//! message it sends through [`ChatMessage`], and inferproxy digests what arrives through
//! it, so an honest replay of an answer has the digest inferproxy reported for it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::call::ToolCall;
use crate::Hash32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of a chat request, in the only shape a witnessable request may carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    pub role: ChatRole,
    /// Written `null` when absent.
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<MessageCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// A tool call of an assistant message: `{"id","type":"function","function":{…}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageCall {
    pub id: String,
    pub r#type: CallType,
    pub function: MessageFunction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallType {
    Function,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageFunction {
    pub name: String,
    /// The JSON text exactly as the model emitted it.
    pub arguments: String,
}

impl From<&ToolCall> for MessageCall {
    fn from(c: &ToolCall) -> Self {
        Self {
            id: c.id.clone(),
            r#type: CallType::Function,
            function: MessageFunction {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            },
        }
    }
}

impl ChatMessage {
    fn of(role: ChatRole, content: Option<String>) -> Self {
        Self {
            role,
            content,
            reasoning_content: None,
            tool_calls: None,
            tool_call_id: None,
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::of(ChatRole::System, Some(content.into()))
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::of(ChatRole::User, Some(content.into()))
    }

    /// An assistant message: its text, its reasoning, its calls (none: no `tool_calls`).
    pub fn assistant(
        content: Option<String>,
        reasoning: Option<String>,
        calls: &[&ToolCall],
    ) -> Self {
        Self {
            reasoning_content: reasoning,
            tool_calls: (!calls.is_empty()).then(|| calls.iter().map(|c| (*c).into()).collect()),
            ..Self::of(ChatRole::Assistant, content)
        }
    }

    /// A tool result for the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::of(ChatRole::Tool, Some(content.into()))
        }
    }

    /// Whether the message has the shape its role allows: `tool_calls` on an assistant
    /// message only, `tool_call_id` on a tool message and there always. `Err` names the key.
    pub fn check(&self) -> Result<(), &'static str> {
        match self.role {
            ChatRole::Assistant if self.tool_call_id.is_some() => Err("tool_call_id"),
            ChatRole::Tool if self.tool_call_id.is_none() => Err("tool_call_id"),
            ChatRole::System | ChatRole::User if self.tool_call_id.is_some() => Err("tool_call_id"),
            ChatRole::System | ChatRole::User | ChatRole::Tool if self.tool_calls.is_some() => {
                Err("tool_calls")
            }
            _ => Ok(()),
        }
    }

    /// The message as JSON, as it is sent.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The canonical bytes: keys sorted at every level, no whitespace.
    pub fn canonical(&self) -> Vec<u8> {
        canonical_json(&self.to_value())
    }

    /// SHA-256 of [`ChatMessage::canonical`].
    pub fn digest(&self) -> Hash32 {
        Hash32::digest(&self.canonical())
    }
}

/// `value` with the keys of every object sorted (by their bytes), no whitespace, and
/// serde_json's escaping of strings; whatever order the map kept its keys in.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                scalar(&Value::String(key.clone()), out);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        _ => scalar(value, out),
    }
}

/// A string, number, bool or null as serde_json writes it (writing to a Vec cannot fail).
fn scalar(value: &Value, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(&mut *out, value);
}
