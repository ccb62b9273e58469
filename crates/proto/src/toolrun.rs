//! What brokerd writes to `boxmaker-tool`'s stdin and reads from its stdout: one JSON value
//! each way, one call per run. The tool trusts nothing here beyond what the grant allowed:
//! brokerd has already validated the arguments and checked the constraints.

use serde::{Deserialize, Serialize};

use crate::tools::ToolArgs;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolInvocation {
    pub call: ToolArgs,
    /// The most content bytes to return; more is cut and reported as truncated.
    pub max_bytes: u64,
    /// The granted path prefixes. File tools resolve symlinks and re-check the real path
    /// against these, so a link cannot lead outside them.
    pub roots: Vec<String>,
    /// For `http_fetch`: the socket addresses brokerd resolved for the URL's host
    /// (`"93.184.216.34:443"`, `"[2606:2800::1]:443"`). The tool connects only to these.
    pub addresses: Vec<String>,
    /// For `consult`: where the remote model is and which credential holds its key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consult: Option<ConsultTarget>,
    /// The tool's own deadline for network work, in milliseconds.
    pub timeout_ms: u64,
    /// For the note tools, where the tool finds what brokerd bound: for `note_read` the one
    /// note (a file), for `note_list` the notes directory, both read-only; for `note_write`
    /// the empty per-call directory it writes `<name>.md` into, for brokerd to check and
    /// move into place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// For `note_search` and `session_search`: the index partitions brokerd bound (files,
    /// read-only), the only ones the tool opens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index: Vec<String>,
}

/// An OpenAI-compatible chat completion endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsultTarget {
    /// The base URL, for example `https://api.example.com/v1`.
    pub url: String,
    pub model: String,
    /// The credential's name in `$CREDENTIALS_DIRECTORY`.
    pub credential: String,
}

/// Cuts `text` to at most `max` bytes at a character boundary; says whether it cut. The
/// tool cuts its content with it, and brokerd cuts the tool's answer again.
pub fn cap_str(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

/// The tool's answer on stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolOutput {
    Ok { content: String, truncated: bool },
    Failed { message: String },
}
