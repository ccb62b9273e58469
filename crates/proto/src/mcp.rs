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
    /// Empty for a remote server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<McpEnv>,
    /// A remote server, reached over Streamable HTTP instead of started (then `command` and
    /// `env` are empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<McpRemote>,
}

/// A remote server: its `http://` URL and the only addresses the tool connects to for it,
/// which brokerd resolved and the unit admits (`"192.0.2.7:8080"`). The tool asks no DNS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpRemote {
    pub url: String,
    pub addresses: Vec<String>,
    /// A header whose value is a credential's content in `$CREDENTIALS_DIRECTORY` (the
    /// deciding grant's secret), sent on every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<McpHeader>,
}

/// A header for a remote server, its value read from a credential:
/// `{"name":"Authorization","credential":"gh-token"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpHeader {
    pub name: String,
    pub credential: String,
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

impl McpFailure {
    /// The kind's wire name (`mcp_changed`, `timeout`, …), for messages and the audit.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::McpChanged { .. } => "mcp_changed",
            Self::ToolError => "tool_error",
            Self::ServerError { .. } => "server_error",
            Self::Start => "start",
            Self::Closed => "closed",
            Self::Timeout => "timeout",
            Self::TooLarge => "too_large",
            Self::Version => "version",
            Self::Protocol => "protocol",
            Self::Invocation => "invocation",
        }
    }
}

/// A call of a pinned MCP tool as brokerd decided it: the server's name in the
/// configuration, the tool's name as the server lists it, and the arguments checked
/// against the pinned schema, in canonical form (what constraints matched, the approval
/// binds to, the audit keeps and the server receives). Only brokerd makes one, after that
/// check (`ToolArgs::parse` never does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpArgs {
    pub arguments: String,
    pub server: String,
    pub tool: String,
}

impl McpArgs {
    /// The name a grant gives this tool: `mcp:<server>/<tool>`.
    pub fn grant_tool(&self) -> String {
        format!("mcp:{}/{}", self.server, self.tool)
    }
}

/// The owner's channel: the configured MCP servers and their pins. Answered with
/// `mcp_listing`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpQuery {
    /// One server (its pin file's text is then included), or every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// What brokerd holds of each configured server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpListing {
    pub servers: Vec<McpServerState>,
}

/// One configured server: its command, its pin (when it has one) and where the pin comes
/// from, and whether a call found its tools changed since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerState {
    pub name: String,
    /// Empty for a remote server.
    pub command: Vec<String>,
    /// A remote server's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The pin file brokerd reads for it.
    pub pin_file: String,
    /// Whether that file is the configuration's (`[[mcp]] pin`, the NixOS module's
    /// `pin`), which `bxctl mcp pin` does not replace.
    pub pin_configured: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<Hash32>,
    /// The offered names of its pinned tools (`mcp__<server>__<tool>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The hash a call found instead of the pin's: its calls are refused (`mcp_changed`)
    /// until the owner pins it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<Hash32>,
    /// The pin file's text, when the query named this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
}

/// The owner's channel: start the server in a unit (no network), list its tools, and hold
/// the list for `mcp_pin`. Answered with `mcp_probed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpProbe {
    pub server: String,
}

/// The probe's outcome: what the owner is shown (`mcp-pin`'s answer), and, when the list
/// can be pinned, the pin file's text brokerd would write. `refused` says why it cannot
/// be (a name that cannot be offered, a schema keyword the validator does not support).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpProbed {
    pub server: String,
    pub output: McpPinOutput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The owner's channel: pin the list the last probe of `server` showed, which must hash to
/// `hash` (what the owner saw). Answered with `mcp_pinned`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpPin {
    pub server: String,
    pub hash: Hash32,
}

/// The pin is on disk and in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpPinned {
    pub server: String,
    pub hash: Hash32,
    pub pin_file: String,
}

/// loopd (on its `broker.sock`) and inferproxy (on `witness.sock`): the tools a request
/// may offer now. Answered with `tools_offered`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsQuery {}

/// boxmaker's own tools followed by every pinned MCP tool, as the `tools` of a chat
/// request (canonical JSON), and the hash a witnessable request's `tools` must have
/// (`crate::attest::tools::hash_of`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsOffered {
    pub tools: String,
    pub hash: Hash32,
}
