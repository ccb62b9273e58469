//! What brokerd writes to `boxmaker-tool mcp-call` and `boxmaker-tool mcp-pin` and reads
//! back: one JSON value each way, one server session per run. The tool starts the server
//! (`command`, as brokerd gives it) as its child, speaks MCP to it over stdio and stops it.
//!
//! Like every proto type: unknown fields refused, no floats, no free-form maps. What the
//! server says of its tools (schemas hold any JSON) travels as JSON text, which the `mcp`
//! crate parses strictly where it is used.

use serde::{Deserialize, Serialize};

use crate::Hash32;

/// How to start one MCP server: its argv and the environment it gets, nothing else (the
/// tool passes on `PATH` and these).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// The server's name in the configuration (`mcp__<name>__<tool>`), for messages.
    pub name: String,
    /// The program and its arguments; the program is a path or is looked up on `PATH`.
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<McpEnv>,
}

/// One environment variable for the server: a value, or the content of a credential in
/// `$CREDENTIALS_DIRECTORY` (a grant's secret, never written in the invocation):
/// `{"from":"value","name":"TZ","value":"UTC"}`, `{"from":"credential","name":"TOKEN",
/// "credential":"gh-token"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpEnv {
    Value { name: String, value: String },
    Credential { name: String, credential: String },
}

/// `boxmaker-tool mcp-call`: one call of one pinned tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpCallInvocation {
    pub server: McpServer,
    /// The tool's name as the server lists it (not the `mcp__` name).
    pub tool: String,
    /// The canonical arguments brokerd validated against the pinned schema: sent as they
    /// are, never checked again here.
    pub arguments: String,
    /// The pin's hash of the tool list: a server whose live list hashes otherwise is not
    /// called (`mcp_changed`).
    pub pin: Hash32,
    /// The most content bytes to return; more is cut and reported as truncated.
    pub max_bytes: u64,
    /// The whole session's deadline (start, initialize, list, call), in milliseconds.
    pub timeout_ms: u64,
}

/// `boxmaker-tool mcp-pin`: what the owner is shown and pins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpPinInvocation {
    pub server: McpServer,
    pub timeout_ms: u64,
}

/// A request the server made of the client; every one was answered with an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpRefused {
    /// `sampling/createMessage`.
    Sampling,
    /// `elicitation/create`.
    Elicitation,
    /// `roots/list`.
    Roots,
    Ping,
    /// Another method, named when it is short, visible ASCII.
    Other {
        name: String,
    },
}

/// What the server did besides answering, for the audit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpReport {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<McpRefused>,
    #[serde(default)]
    pub notifications: u64,
}

/// Why an MCP session gave no result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpFailure {
    /// The live tool list is not the pinned one: nothing was called.
    McpChanged { pinned: Hash32, found: Hash32 },
    /// The tool ran and said it failed (`isError`).
    ToolError,
    /// The server answered a request with a JSON-RPC error.
    ServerError { code: i64 },
    /// The server could not be started.
    Start,
    /// The server's output ended (it exited) while an answer was due.
    Closed,
    /// The session's time ran out.
    Timeout,
    /// A message, or everything the server sent, passed a limit.
    TooLarge,
    /// The server speaks another protocol version.
    Version,
    /// The server sent something that is not the protocol (or too many tools, pages or
    /// requests).
    Protocol,
    /// The invocation could not be read or is not one.
    Invocation,
}

/// `boxmaker-tool mcp-call`'s answer on stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpCallOutput {
    /// The text content (and descriptions of anything else), cut to `max_bytes`.
    Ok {
        content: String,
        truncated: bool,
        report: McpReport,
    },
    /// No result: why, in words for the model (for `tool_error`, the tool's own text, cut
    /// to `max_bytes`), and as a kind for brokerd and the audit.
    Failed {
        failure: McpFailure,
        message: String,
        report: McpReport,
    },
}

/// `boxmaker-tool mcp-pin`'s answer on stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpPinOutput {
    /// What `initialize` and `tools/list` gave. `tools` is the canonical JSON of the list
    /// (each `{"description","inputSchema","name"}`, sorted by name); `hash` is the `mcp`
    /// crate's hash of it, which a pin made from it carries.
    Ok {
        protocol_version: String,
        server_name: String,
        server_version: String,
        tools: String,
        hash: Hash32,
        report: McpReport,
    },
    Failed {
        failure: McpFailure,
        message: String,
        report: McpReport,
    },
}
