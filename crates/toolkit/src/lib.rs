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
//! The hands (`write_file`, `edit_file`, `run`) come as stages instead
//! ([`proto::tools::stage::StageInvocation`], told apart by its `stage` key) and are
//! answered with a `StageOutput` (docs/decisions.md H12): `look` and `commit` in `write`,
//! the executor in `run`.
//!
//! Every failure of the tool itself is a [`ToolError`], answered as a [`ToolOutput::Failed`]
//! whose message is the error's `Display` (the texts are in `error.rs`); only an unreadable
//! stdin or unwritable stdout ([`RunError`]) ends the process non-zero.
//!
//! Text rules, for every tool: content is at most `max_bytes` bytes of UTF-8, cut at a
//! character boundary (`truncated: true` when anything was cut). Bytes that are not UTF-8
//! are replaced with U+FFFD, except that content with a NUL byte in its first 8 KiB is
//! taken to be binary and refused.

mod consult;
mod error;
mod fetch;
mod files;
pub mod mcp_session;
mod net;
mod notes;
mod run;
pub mod stage;
mod stage_error;
mod text;
mod write;

use std::io::{self, Read, Write};
use std::path::Path;

use proto::toolrun::{ToolInvocation, ToolOutput};
use proto::tools::ToolArgs;

pub use error::{ConsultError, Failure, FileError, NetError, ToolError};

/// The largest invocation read from stdin. A ToolInvocation holds arguments that came
/// through a 1 MiB frame, so anything larger is not from brokerd.
pub const MAX_INPUT: u64 = 1 << 20;

/// What a tool returns when it succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    pub content: String,
    pub truncated: bool,
}

/// What one call came to: its content, or why its answer is `failed`.
pub type ToolResult = Result<Content, ToolError>;

/// Why no answer could be given; `main` exits non-zero with the status its table gives
/// (through [`daemon::exit::Status`]).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// stdin could not be read, so there is no invocation to answer.
    #[error("cannot read stdin: {0}")]
    Stdin(io::Error),
    /// The answer could not be written to stdout.
    #[error("cannot write the answer to stdout: {0}")]
    Stdout(io::Error),
}

impl daemon::exit::Status for RunError {
    /// Every variant is listed, so a new one is given its status on purpose.
    fn exit_code(&self) -> u8 {
        match self {
            Self::Stdin(_) => 2,
            Self::Stdout(_) => 3,
        }
    }
}

/// The whole process: reads one invocation from `input`, executes it and writes the one
/// answer line to `output`. `Err` only when there can be no answer.
pub fn serve(input: impl Read, mut output: impl Write) -> Result<(), RunError> {
    let bytes = read_input(input).map_err(RunError::Stdin)?;
    let line = match &bytes {
        Some(b) if stage::is_stage(b) => {
            serde_json::to_string(&stage::answer(b)).unwrap_or_else(|_| {
                r#"{"status":"failed","failure":"io","message":"cannot serialise the output"}"#
                    .into()
            })
        }
        Some(b) => render(&answer(run_bytes(b))),
        None => render(&answer(Err(ToolError::TooLarge { limit: MAX_INPUT }))),
    };
    writeln!(output, "{line}")
        .and_then(|()| output.flush())
        .map_err(RunError::Stdout)
}

/// Reads one invocation (at most [`MAX_INPUT`] bytes) from `input` and executes it.
/// `Err` only when `input` cannot be read; everything else is an answer.
pub fn run(input: impl Read) -> io::Result<ToolResult> {
    Ok(match read_input(input)? {
        Some(bytes) => run_bytes(&bytes),
        None => Err(ToolError::TooLarge { limit: MAX_INPUT }),
    })
}

/// At most [`MAX_INPUT`] bytes of `input`; `None` when there was more.
fn read_input(input: impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    input.take(MAX_INPUT + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_INPUT).then_some(bytes))
}

/// Parses and executes one invocation. The credentials directory comes from
/// `$CREDENTIALS_DIRECTORY`, where systemd's LoadCredential puts the grant's secret.
pub fn run_bytes(input: &[u8]) -> ToolResult {
    let invocation: ToolInvocation =
        serde_json::from_slice(input).map_err(ToolError::Invocation)?;
    let credentials = std::env::var_os("CREDENTIALS_DIRECTORY");
    execute(&invocation, credentials.as_deref().map(Path::new))
}

/// Executes a parsed invocation; `credentials` is the credentials directory, if any.
pub fn execute(invocation: &ToolInvocation, credentials: Option<&Path>) -> ToolResult {
    let result = match &invocation.call {
        ToolArgs::ReadFile(a) => files::read_file(&a.path, invocation),
        ToolArgs::ListDir(a) => files::list_dir(&a.path, invocation),
        ToolArgs::HttpFetch(a) => fetch::http_fetch(&a.url, invocation),
        ToolArgs::Consult(a) => consult::consult(&a.prompt, invocation, credentials),
        ToolArgs::NoteWrite(a) => notes::write(a, invocation),
        ToolArgs::NoteRead(a) => notes::read(&a.name, invocation),
        ToolArgs::NoteList(_) => notes::list(invocation),
        ToolArgs::NoteSearch(a) => notes::search(&a.query, noteindex::Kind::Note, invocation),
        ToolArgs::SessionSearch(a) => notes::search(&a.query, noteindex::Kind::Session, invocation),
        ToolArgs::Mcp(_) => Err(Failure::McpNotHere),
        ToolArgs::WriteFile(_) | ToolArgs::EditFile(_) | ToolArgs::Run(_) => Err(Failure::Staged),
    };
    result.map_err(|source| ToolError::Tool {
        tool: invocation.call.tool(),
        error: Box::new(source),
    })
}

/// The answer for a call's result: a failure's message is its error's `Display`.
pub fn answer(result: ToolResult) -> ToolOutput {
    match result {
        Ok(c) => ToolOutput::Ok {
            content: c.content,
            truncated: c.truncated,
        },
        Err(e) => ToolOutput::Failed {
            message: e.to_string(),
        },
    }
}

/// The single line written to stdout.
pub fn render(output: &ToolOutput) -> String {
    // Serialising this enum of strings and a bool cannot fail; should it ever, the answer
    // is still one well-formed failed output rather than nothing.
    serde_json::to_string(output)
        .unwrap_or_else(|_| r#"{"status":"failed","message":"cannot serialise the output"}"#.into())
}

/// `max_bytes` as a usize (it is a u64 on the wire); saturates on 32-bit targets.
pub(crate) fn max_bytes(invocation: &ToolInvocation) -> usize {
    usize::try_from(invocation.max_bytes).unwrap_or(usize::MAX)
}
