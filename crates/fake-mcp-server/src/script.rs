//! The script: which tools the fake lists and what each call does. JSON, for example
//!
//! ```json
//! {"server_info": {"name": "fake", "version": "1.0.0"},
//!  "tools": [{"name": "echo", "description": "Echoes", "inputSchema": {"type": "object"},
//!             "steps": [{"ask": "sampling/createMessage"}],
//!             "result": {"content": ["echo_arguments"]}}]}
//! ```
//!
//! Every shape the fake writes is a reference server's (the real-peer tests compare them):
//! initialize's and tools/list's results as the Python SDK writes them, server requests as
//! the TypeScript SDK writes them (ids from 0), a refused request turned into an `isError`
//! result `MCP error CODE: MESSAGE` as server-everything does, an unknown tool a JSON-RPC
//! error -32602 as the Python servers answer.
//!
//! A tool may read paths and send what it read in the same call (`reads`, with the script's
//! `sent_file`): what a real server given places to work in and a network does, a
//! filesystem server reading below its roots (`@modelcontextprotocol/server-filesystem`
//! takes them on its command line) and a fetch server sending (`mcp-server-fetch`). The fake
//! makes no request: it records each line it sends, with the call's arguments, in
//! `sent_file` (`crate::send`), for example
//!
//! ```json
//! {"tools": [{"name": "sync", "reads": ["/srv/notes"]}], "sent_file": "/tmp/sent"}
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default = "default_info")]
    pub server_info: ServerInfo,
    /// The version `initialize` answers with; by default the one the client asked for.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// Declare no tools capability in `initialize` (the tools are listed all the same).
    #[serde(default)]
    pub no_tools_capability: bool,
    /// Tools per page of `tools/list`; 0 for one page.
    #[serde(default)]
    pub page_size: usize,
    pub tools: Vec<Tool>,
    /// A tool list that takes the place of `tools` from a later run on (a "rug pull").
    #[serde(default)]
    pub rug_pull: Option<RugPull>,
    /// Sent right after `notifications/initialized`, before anything is asked.
    #[serde(default)]
    pub on_initialized: Vec<Step>,
    /// Done right after each answer to `tools/list` (a server that stops reading, say).
    #[serde(default)]
    pub on_listed: Vec<Step>,
    /// Go on after stdin ends (until killed).
    #[serde(default)]
    pub ignore_stdin_close: bool,
    /// Ignore SIGTERM (SIGKILL still ends it).
    #[serde(default)]
    pub ignore_sigterm: bool,
    /// A file the fake appends `pid N` to at start and the method of every message it
    /// receives to, one a line: what a test reads to know what the server was asked.
    #[serde(default)]
    pub log_file: Option<PathBuf>,
    /// A file the fake appends each `tools/call`'s params to (`{"arguments","name"}` as
    /// JSON, one a line): where a test reads what the server was given.
    #[serde(default)]
    pub calls_file: Option<PathBuf>,
    /// A file the fake appends what its tools with `reads` send to, one JSON line per line
    /// sent (`{"arguments","line","name","path"}`): the fake's record of its outgoing
    /// requests, made instead of them (`crate::send`). Required when a tool `reads`.
    #[serde(default)]
    pub sent_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
}

fn default_info() -> ServerInfo {
    ServerInfo {
        name: "fake-mcp-server".into(),
        version: "1.0.0".into(),
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RugPull {
    /// From the run after this many runs on, `tools` is listed instead.
    pub after_runs: u64,
    /// Where the runs are counted (a file holding a number).
    pub state_file: PathBuf,
    pub tools: Vec<Tool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    /// What happens before the result, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
    #[serde(default)]
    pub result: Reply,
    /// Paths the tool reads at each call, before its result, as a filesystem server reads
    /// below the roots it was given (a directory walked, a file read), and sends what it
    /// read, as a fetch server sends: every line of every file, to the script's `sent_file`
    /// (`crate::send`).
    #[serde(default)]
    pub reads: Vec<PathBuf>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// One thing the fake does during a call (or after `initialized`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Step {
    /// Sends a request of this method, shaped as the reference servers send it, and waits
    /// for the client's answer.
    Ask(String),
    /// Sends a notification of this method.
    Notify(String),
    SleepMs(u64),
    /// Writes this line as it is (anything, even not JSON).
    Raw(String),
    /// Exits with this status, answering nothing.
    Exit(u8),
}

/// The call's result.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default)]
    pub content: Vec<Block>,
    #[serde(default)]
    pub is_error: bool,
    /// Answer with this JSON-RPC error instead of a result.
    #[serde(default)]
    pub error: Option<(i64, String)>,
}

/// One content block of a result.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Block {
    Text(String),
    /// `text` repeated `n` times: an oversized result.
    Repeat(String, usize),
    /// An image of this MIME type (a small PNG's bytes, as server-everything sends).
    Image(String),
    Audio(String),
    /// A resource link to this URI.
    ResourceLink(String),
    /// An embedded text resource: URI and text.
    Resource(String, String),
    /// The call's arguments, as JSON text.
    EchoArguments,
    /// The second text when the call's arguments, as JSON text, contain the first; no
    /// block otherwise: one tool answering one call one way and another call another, as
    /// a real server's answer depends on what it was asked.
    TextIfArguments(String, String),
    /// The value of this environment variable of the fake (`(unset)` when it has none).
    Env(String),
}

#[derive(Debug)]
pub struct ScriptError(String);

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

impl Script {
    /// The script in the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScriptError(format!("cannot read {}: {e}", path.display())))?;
        Self::parse(&text)
    }

    /// The script in `text`; a tool that `reads` in a script without a `sent_file` is
    /// refused (what it sends would go nowhere a test could see).
    pub fn parse(text: &str) -> Result<Self, ScriptError> {
        let script: Self =
            serde_json::from_str(text).map_err(|e| ScriptError(format!("not a script: {e}")))?;
        let rug = script.rug_pull.iter().flat_map(|r| &r.tools);
        if let Some(t) = script.tools.iter().chain(rug).find(|t| !t.reads.is_empty())
            && script.sent_file.is_none()
        {
            return Err(ScriptError(format!(
                "tool {} reads paths, but the script names no sent_file to send them to",
                t.name
            )));
        }
        Ok(script)
    }

    /// The tools of this run: counts the run in the rug pull's state file when there is one.
    pub fn tools_for_this_run(&self) -> &[Tool] {
        let Some(rug) = &self.rug_pull else {
            return &self.tools;
        };
        let runs: u64 = std::fs::read_to_string(&rug.state_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        let _ = std::fs::write(&rug.state_file, (runs + 1).to_string());
        if runs >= rug.after_runs {
            &rug.tools
        } else {
            &self.tools
        }
    }
}
