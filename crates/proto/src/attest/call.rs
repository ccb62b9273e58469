//! A tool call as the model made it: what a completion's answer carries, what a witness
//! report names and what a message replays.

use serde::{Deserialize, Serialize};

/// A tool call exactly as the server returned it; `arguments` is the JSON text (the session
/// log's, and what a witness report carries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool call exactly as the model emitted it: id, name, and the arguments as the unparsed
/// text the stream carried.
pub type WitnessedCall = ToolCall;
