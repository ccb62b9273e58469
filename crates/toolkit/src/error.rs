//! Why a call's answer is `failed`, and why no answer could be given at all.
//!
//! Every text the model can read from a failed tool run is written here: a [`ToolError`]'s
//! `Display` is the `message` of the [`ToolOutput::Failed`](proto::toolrun::ToolOutput)
//! answer, which brokerd passes on unchanged and the stack and container tests look for.
//! Each variant carries what it is about (the path, the URL, the host, the credential's
//! name, never its value) and keeps the underlying error typed; its text says what the
//! model may read of it, and `source()` returns none (docs/decisions.md F16).

use std::fmt;
use std::io;
use std::net::AddrParseError;
use std::path::{Path, PathBuf};
use std::str::Utf8Error;

use ureq::http::StatusCode;
use url::Url;

/// Why a call was answered `failed`.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// stdin held more than `limit` bytes: not an invocation from brokerd.
    #[error("the invocation is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    /// stdin is not a `ToolInvocation`.
    #[error("invalid invocation: {0}")]
    Invocation(serde_json::Error),
    /// The tool ran and failed; the text is prefixed with the tool's name. (Boxed: a
    /// failure holds a URL and its cause, and this is the `Err` of every call.)
    #[error("{tool}: {error}")]
    Tool {
        tool: &'static str,
        error: Box<Failure>,
    },
}

/// What a tool failed on: one kind per module.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// `read_file` or `list_dir`.
    #[error("{0}")]
    File(FileError),
    /// The URL, the granted addresses, the connection or the HTTP status.
    #[error("{0}")]
    Net(NetError),
    /// `consult`'s target, credential or completion.
    #[error("{0}")]
    Consult(ConsultError),
    /// Content with a NUL byte in its first 8 KiB (`text::BINARY_PROBE`): taken to be
    /// binary and refused.
    #[error("not UTF-8 text (a NUL byte in the first 8 KiB: binary content)")]
    Binary,
    /// A note tool's invocation names no notes directory (brokerd always sends one).
    #[error("the invocation names no notes directory")]
    NoNotesDir,
    /// An MCP call sent to the plain tool mode: it runs as `boxmaker-tool mcp-call`.
    #[error("an MCP call runs as `boxmaker-tool mcp-call`")]
    McpNotHere,
    /// `write_file`, `edit_file` or `run` as a plain invocation: they run only as the
    /// stages brokerd sends (docs/decisions.md H12).
    #[error(
        "this tool runs only as the stages brokerd sends (look, commit, run); a plain \
         invocation of it is never executed"
    )]
    Staged,
    /// A file in the note's place larger than any note brokerd writes.
    #[error(
        "the note is {size} bytes, over the {} a note may hold (not read)",
        proto::notes::MAX_NOTE
    )]
    NoteTooLarge { size: u64 },
    /// `note_search`: the query (an FTS5 syntax error, say) or an index partition.
    #[error("{0}")]
    Search(noteindex::IndexError),
}

/// Why `read_file` or `list_dir` refused or failed on `path` (the path as the call wrote
/// it; where a link leads is never named).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path} is not an absolute path")]
    NotAbsolute { path: String },
    #[error("{path} has a .. component")]
    ParentDir { path: String },
    /// Under none of the invocation's roots.
    #[error("{path} is outside the granted paths")]
    Outside { path: String },
    /// A symlink lies below the granted root it is under. (The target itself is not named:
    /// it may be outside what the owner granted.)
    #[error(
        "{} goes through a symlink below the granted directory; links are not followed",
        path.display()
    )]
    Symlink { path: PathBuf },
    /// A file-system call failed (not found and permission denied in plain words).
    #[error("{}", io_words(path, error))]
    Io { path: PathBuf, error: io::Error },
    /// `read_file` on a directory.
    #[error("{} is a directory, use list_dir", path.display())]
    IsDirectory { path: PathBuf },
    /// `read_file` on a FIFO, socket or device.
    #[error("{} is not a regular file", path.display())]
    NotRegular { path: PathBuf },
    /// The opened file is not the one checked (another device or inode).
    #[error("{} changed while it was opened", path.display())]
    Changed { path: PathBuf },
    /// `list_dir` on something that is not a directory.
    #[error("{} is not a directory, use read_file", path.display())]
    NotDirectory { path: PathBuf },
}

/// A failed file-system call on `path`, not found and permission denied in plain words.
fn io_words(path: &Path, error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => format!("{} does not exist", path.display()),
        io::ErrorKind::PermissionDenied => format!("{}: permission denied", path.display()),
        _ => format!("{}: {error}", path.display()),
    }
}

/// Why a network tool could not reach its URL or got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// `text` does not parse as a URL.
    #[error("invalid URL {text:?}: {error}")]
    InvalidUrl {
        text: String,
        error: url::ParseError,
    },
    /// Neither http nor https.
    #[error("{text}: only http and https URLs are fetched")]
    Scheme { text: String },
    #[error("{text}: the URL has no host")]
    NoHost { text: String },
    #[error("{url}: no port")]
    NoPort { url: Url },
    /// One of the invocation's addresses is not `ip:port` (the address is named; the
    /// parser's words add nothing to it).
    #[error("the granted address {text:?} is not a socket address")]
    BadAddress { text: String, error: AddrParseError },
    /// The invocation has no addresses for `host`.
    #[error("no addresses were granted for {host}")]
    NoAddresses { host: String },
    /// None of the invocation's addresses is on the URL's port.
    #[error("none of the granted addresses for {host} is on port {port}")]
    WrongPort { host: String, port: u16 },
    /// The request failed (connection, TLS, timeout) before a status came back. (Boxed:
    /// ureq's error is large, and every tool's `Result` carries this type.)
    #[error("{url}: {}", request_words(error, *timeout_ms))]
    Request {
        url: Url,
        timeout_ms: u64,
        error: Box<ureq::Error>,
    },
    /// Reading the response body failed.
    #[error("{url}: {}", IoWords(error, *timeout_ms))]
    Body {
        url: Url,
        timeout_ms: u64,
        error: io::Error,
    },
    /// A status that is not a success (for `consult`, with the API's own message, the key
    /// blanked out).
    #[error("{url}: HTTP {}{}", status_words(*status), detail_words(detail.as_deref()))]
    Status {
        url: Url,
        status: StatusCode,
        detail: Option<String>,
    },
}

/// The API's own message after a status, when it sent one.
fn detail_words(detail: Option<&str>) -> String {
    detail.map_or(String::new(), |d| format!(": {d}"))
}

/// A request that failed before a status came back, in words for the model.
fn request_words(error: &ureq::Error, timeout_ms: u64) -> String {
    match error {
        ureq::Error::Timeout(_) => format!("timed out after {timeout_ms} ms"),
        ureq::Error::Io(io) => IoWords(io, timeout_ms).to_string(),
        other => other.to_string(),
    }
}

/// Why `consult` could not ask the remote model. Credential errors name the credential,
/// never its value: no variant holds the key's bytes, and no text says where in them a
/// byte was wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConsultError {
    /// The invocation has no consult target.
    #[error("the invocation names no remote model (consult target missing)")]
    NoTarget,
    /// The credential's name is not one plain file name.
    #[error("the credential name {name:?} is not a plain file name")]
    CredentialName { name: String },
    /// `$CREDENTIALS_DIRECTORY` is not set.
    #[error(
        "$CREDENTIALS_DIRECTORY is not set: the unit was started without the credential \
         {name:?} (LoadCredential)"
    )]
    NoCredentials { name: String },
    #[error("cannot read the credential {name:?} from $CREDENTIALS_DIRECTORY: {error}")]
    CredentialOpen { name: String, error: io::Error },
    #[error("cannot read the credential {name:?}: {error}")]
    CredentialRead { name: String, error: io::Error },
    #[error("the credential {name:?} is larger than {limit} bytes")]
    CredentialTooLarge { name: String, limit: usize },
    /// Not UTF-8; where is not said (it would tell something of the key).
    #[error("the credential {name:?} is not UTF-8 text")]
    CredentialNotUtf8 { name: String, error: Utf8Error },
    #[error("the credential {name:?} is empty")]
    CredentialEmpty { name: String },
    /// Holds a byte an HTTP header cannot carry.
    #[error("the credential {name:?} holds characters an HTTP header cannot carry")]
    CredentialNotHeader { name: String },
    /// The request body cannot be encoded.
    #[error("cannot encode the request: {0}")]
    Encode(serde_json::Error),
    #[error("{url}: the response is larger than {limit} bytes")]
    ResponseTooLarge { url: Url, limit: usize },
    #[error("{url}: not a chat completion: {error}")]
    NotCompletion { url: Url, error: serde_json::Error },
    #[error("{url}: the completion has no choices")]
    NoChoices { url: Url },
    #[error("{url}: the completion's message has no content")]
    NoContent { url: Url },
}

/// An I/O error of a connection in words for the model: a timeout names the call's limit.
struct IoWords<'a>(&'a io::Error, u64);

impl fmt::Display for IoWords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self(e, timeout_ms) = self;
        match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                write!(f, "timed out after {timeout_ms} ms")
            }
            io::ErrorKind::ConnectionRefused => f.write_str("connection refused"),
            _ => e.fmt(f),
        }
    }
}

impl From<FileError> for Failure {
    fn from(e: FileError) -> Self {
        Self::File(e)
    }
}

impl From<NetError> for Failure {
    fn from(e: NetError) -> Self {
        Self::Net(e)
    }
}

impl From<ConsultError> for Failure {
    fn from(e: ConsultError) -> Self {
        Self::Consult(e)
    }
}

/// `404 Not Found`; a code without a standard reason is just the number.
pub fn status_words(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}
