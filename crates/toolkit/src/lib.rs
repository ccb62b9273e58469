//! `boxmaker-tool`: executes one tool call per process.
//!
//! brokerd starts the binary once per call, inside a transient systemd unit (an empty root
//! into which only the granted paths are bound, no network unless the grant names hosts, the
//! grant's secret as a credential), or as a plain child with the development runner. It
//! writes one [`ToolInvocation`] to stdin and reads one [`ToolOutput`] from stdout.
//!
//! brokerd has already validated the arguments and decided the policy; this crate does not
//! decide anything. It re-checks what the sandbox makes true anyway (real paths inside the
//! roots, connections only to the resolved addresses), so that a mistake in the unit's
//! properties, or the development runner, which has no sandbox, does not widen a grant.
//!
//! Every failure of the tool itself is a [`ToolOutput::Failed`] with a message for the
//! model; only an unreadable stdin or unwritable stdout ends the process non-zero.
//!
//! Text rules, for every tool: content is at most `max_bytes` bytes of UTF-8, cut at a
//! character boundary (`truncated: true` when anything was cut). Bytes that are not UTF-8
//! are replaced with U+FFFD, except that content with a NUL byte in its first 8 KiB is
//! taken to be binary and refused.

mod consult;
mod fetch;
mod files;
mod net;
mod text;

use std::io::Read;
use std::path::Path;

use proto::toolrun::{ToolInvocation, ToolOutput};
use proto::tools::ToolArgs;

/// The largest invocation read from stdin. A ToolInvocation holds arguments that came
/// through a 1 MiB frame, so anything larger is not from brokerd.
pub const MAX_INPUT: u64 = 1 << 20;

/// What a tool returns when it succeeds; a failure is the message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Content {
    pub content: String,
    pub truncated: bool,
}

pub(crate) type ToolResult = Result<Content, String>;

/// Reads one invocation (at most [`MAX_INPUT`] bytes) from `input` and executes it.
/// `Err` only when `input` cannot be read; everything else is an answer.
pub fn run(input: impl Read) -> std::io::Result<ToolOutput> {
    let mut bytes = Vec::new();
    input.take(MAX_INPUT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_INPUT {
        return Ok(failed(format!(
            "the invocation is larger than {MAX_INPUT} bytes"
        )));
    }
    Ok(run_bytes(&bytes))
}

/// Parses and executes one invocation. The credentials directory comes from
/// `$CREDENTIALS_DIRECTORY`, where systemd's LoadCredential puts the grant's secret.
pub fn run_bytes(input: &[u8]) -> ToolOutput {
    let invocation: ToolInvocation = match serde_json::from_slice(input) {
        Ok(inv) => inv,
        Err(e) => return failed(format!("invalid invocation: {e}")),
    };
    let credentials = std::env::var_os("CREDENTIALS_DIRECTORY");
    execute(&invocation, credentials.as_deref().map(Path::new))
}

/// Executes a parsed invocation; `credentials` is the credentials directory, if any.
pub fn execute(invocation: &ToolInvocation, credentials: Option<&Path>) -> ToolOutput {
    let result = match &invocation.call {
        ToolArgs::ReadFile(a) => files::read_file(&a.path, invocation),
        ToolArgs::ListDir(a) => files::list_dir(&a.path, invocation),
        ToolArgs::HttpFetch(a) => fetch::http_fetch(&a.url, invocation),
        ToolArgs::Consult(a) => consult::consult(&a.prompt, invocation, credentials),
    };
    match result {
        Ok(c) => ToolOutput::Ok {
            content: c.content,
            truncated: c.truncated,
        },
        Err(message) => failed(format!("{}: {message}", invocation.call.tool())),
    }
}

/// The single line written to stdout.
pub fn render(output: &ToolOutput) -> String {
    // Serialising this enum of strings and a bool cannot fail; should it ever, the answer
    // is still one well-formed failed output rather than nothing.
    serde_json::to_string(output)
        .unwrap_or_else(|_| r#"{"status":"failed","message":"cannot serialise the output"}"#.into())
}

fn failed(message: String) -> ToolOutput {
    ToolOutput::Failed { message }
}

/// `max_bytes` as a usize (it is a u64 on the wire); saturates on 32-bit targets.
pub(crate) fn max_bytes(invocation: &ToolInvocation) -> usize {
    usize::try_from(invocation.max_bytes).unwrap_or(usize::MAX)
}
