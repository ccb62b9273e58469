//! JSON-RPC 2.0 messages, as MCP uses them: one JSON object per message (no batches, which
//! MCP dropped in 2025-06-18), ids that are integers or strings, never null in a request.
//!
//! What comes from the server is parsed strictly ([`crate::json::parse_strict`]) and then
//! sorted into exactly one kind by its members; an object with members of two kinds, or any
//! member JSON-RPC does not define, is refused.

use std::fmt;

use serde_json::{Map, Value, json};

use crate::error::McpError;
use crate::json::parse_strict;

/// A request id. The client's own are integers counting up from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id {
    Number(i64),
    String(String),
}

impl Id {
    fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => json!(n),
            Self::String(s) => json!(s),
        }
    }

    fn from_value(value: &Value) -> Result<Self, McpError> {
        match value {
            Value::Number(n) => n
                .as_i64()
                .map(Self::Number)
                .ok_or_else(|| McpError::protocol("an id that is not an integer")),
            Value::String(s) => Ok(Self::String(s.clone())),
            _ => Err(McpError::protocol(
                "an id that is neither an integer nor a string",
            )),
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// One message from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of the client's requests.
    Response { id: Id, result: Map<String, Value> },
    /// A request failed. `id` is `None` when the server could not tell which (`"id":null`).
    Error {
        id: Option<Id>,
        code: i64,
        message: String,
    },
    /// The server asks the client something (sampling, elicitation, roots, ping, ...).
    Request { id: Id, method: String },
    /// The server tells the client something; no answer is due.
    Notification { method: String },
}

/// The members a message may have at its top level.
const MEMBERS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// Parses one message from the server.
pub fn parse_incoming(bytes: &[u8]) -> Result<Incoming, McpError> {
    let value = parse_strict(bytes).map_err(|e| McpError::protocol(format!("not JSON: {e}")))?;
    let Value::Object(mut map) = value else {
        return Err(McpError::protocol(
            "a message that is not a JSON object (batches are not part of MCP)",
        ));
    };
    if let Some(other) = map.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        return Err(McpError::protocol(format!(
            "a message with the member {other:?}, which JSON-RPC does not define"
        )));
    }
    if map.remove("jsonrpc") != Some(json!("2.0")) {
        return Err(McpError::protocol("a message whose jsonrpc is not \"2.0\""));
    }
    let id = map.remove("id");
    let method = map.remove("method");
    let params = map.remove("params");
    let result = map.remove("result");
    let error = map.remove("error");
    match (method, result, error) {
        (Some(method), None, None) => {
            let Value::String(method) = method else {
                return Err(McpError::protocol("a method that is not a string"));
            };
            if params.as_ref().is_some_and(|p| !p.is_object()) {
                return Err(McpError::protocol(format!(
                    "{method}: params that are not an object"
                )));
            }
            match id {
                None => Ok(Incoming::Notification { method }),
                Some(id) => Ok(Incoming::Request {
                    id: Id::from_value(&id)?,
                    method,
                }),
            }
        }
        (None, Some(result), None) if params.is_none() => {
            let id = id.ok_or_else(|| McpError::protocol("a result without an id"))?;
            let Value::Object(result) = result else {
                return Err(McpError::protocol("a result that is not an object"));
            };
            Ok(Incoming::Response {
                id: Id::from_value(&id)?,
                result,
            })
        }
        (None, None, Some(error)) if params.is_none() => {
            let id = match id {
                None | Some(Value::Null) => None,
                Some(id) => Some(Id::from_value(&id)?),
            };
            let (code, message) = error_members(&error)?;
            Ok(Incoming::Error { id, code, message })
        }
        _ => Err(McpError::protocol(
            "a message that is not exactly one of a request, a notification, a result or an error",
        )),
    }
}

fn error_members(error: &Value) -> Result<(i64, String), McpError> {
    let Value::Object(e) = error else {
        return Err(McpError::protocol("an error that is not an object"));
    };
    if let Some(other) = e
        .keys()
        .find(|k| !["code", "message", "data"].contains(&k.as_str()))
    {
        return Err(McpError::protocol(format!(
            "an error with the member {other:?}"
        )));
    }
    let code = e
        .get("code")
        .and_then(Value::as_i64)
        .ok_or_else(|| McpError::protocol("an error without an integer code"))?;
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::protocol("an error without a message"))?;
    Ok((code, message.to_owned()))
}

/// A request from the client.
pub fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification from the client.
pub fn notification(method: &str) -> String {
    json!({"jsonrpc": "2.0", "method": method}).to_string()
}

/// JSON-RPC's code for a method the receiver does not offer.
pub const METHOD_NOT_FOUND: i64 = -32601;

/// The client's error answer to a server's request.
pub fn error_response(id: &Id, code: i64, message: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id.to_value(),
        "error": {"code": code, "message": message},
    })
    .to_string()
}
