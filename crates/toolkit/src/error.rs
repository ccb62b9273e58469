//! Why a call's answer is `failed`, and why no answer could be given at all.
//!
//! Every text the model can read from a failed tool run is written here: a [`ToolError`]'s
//! `Display` is the `message` of the [`ToolOutput::Failed`](proto::toolrun::ToolOutput)
//! answer, which brokerd passes on unchanged and the stack and container tests look for.
//! Each variant carries what it is about (the path, the URL, the host, the credential's
//! name, never its value) and keeps the underlying error as its `source()`.

use std::fmt;
use std::io;
use std::net::AddrParseError;
use std::path::PathBuf;
use std::str::Utf8Error;

use ureq::http::StatusCode;
use url::Url;

/// Why a call was answered `failed`.
#[derive(Debug)]
pub enum ToolError {
    /// stdin held more than `limit` bytes: not an invocation from brokerd.
    TooLarge { limit: u64 },
    /// stdin is not a `ToolInvocation`.
    Invocation(serde_json::Error),
    /// The tool ran and failed; the text is prefixed with the tool's name. (Boxed: a
    /// failure holds a URL and its cause, and this is the `Err` of every call.)
    Tool {
        tool: &'static str,
        source: Box<Failure>,
    },
}

/// What a tool failed on: one kind per module.
#[derive(Debug)]
pub enum Failure {
    /// `read_file` or `list_dir`.
    File(FileError),
    /// The URL, the granted addresses, the connection or the HTTP status.
    Net(NetError),
    /// `consult`'s target, credential or completion.
    Consult(ConsultError),
    /// Content with a NUL byte in its first 8 KiB (`text::BINARY_PROBE`): taken to be
    /// binary and refused.
    Binary,
    /// A note tool's invocation names no notes directory (brokerd always sends one).
    NoNotesDir,
    /// `write_file`, `edit_file` or `run` as a plain invocation: they run only as the
    /// stages brokerd sends (docs/decisions.md H12).
    Staged,
    /// A file in the note's place larger than any note brokerd writes.
    NoteTooLarge { size: u64 },
    /// `note_search`: the query (an FTS5 syntax error, say) or an index partition.
    Search(noteindex::IndexError),
}

/// Why `read_file` or `list_dir` refused or failed on `path` (the path as the call wrote
/// it; where a link leads is never named).
#[derive(Debug)]
pub enum FileError {
    NotAbsolute {
        path: String,
    },
    ParentDir {
        path: String,
    },
    /// Under none of the invocation's roots.
    Outside {
        path: String,
    },
    /// A symlink lies below the granted root it is under.
    Symlink {
        path: PathBuf,
    },
    /// A file-system call failed (not found and permission denied in plain words).
    Io {
        path: PathBuf,
        source: io::Error,
    },
    /// `read_file` on a directory.
    IsDirectory {
        path: PathBuf,
    },
    /// `read_file` on a FIFO, socket or device.
    NotRegular {
        path: PathBuf,
    },
    /// The opened file is not the one checked (another device or inode).
    Changed {
        path: PathBuf,
    },
    /// `list_dir` on something that is not a directory.
    NotDirectory {
        path: PathBuf,
    },
}

/// Why a network tool could not reach its URL or got no usable answer.
#[derive(Debug)]
pub enum NetError {
    /// `text` does not parse as a URL.
    InvalidUrl {
        text: String,
        source: url::ParseError,
    },
    /// Neither http nor https.
    Scheme {
        text: String,
    },
    NoHost {
        text: String,
    },
    NoPort {
        url: Url,
    },
    /// One of the invocation's addresses is not `ip:port`.
    BadAddress {
        text: String,
        source: AddrParseError,
    },
    /// The invocation has no addresses for `host`.
    NoAddresses {
        host: String,
    },
    /// None of the invocation's addresses is on the URL's port.
    WrongPort {
        host: String,
        port: u16,
    },
    /// The request failed (connection, TLS, timeout) before a status came back. (Boxed:
    /// ureq's error is large, and every tool's `Result` carries this type.)
    Request {
        url: Url,
        timeout_ms: u64,
        source: Box<ureq::Error>,
    },
    /// Reading the response body failed.
    Body {
        url: Url,
        timeout_ms: u64,
        source: io::Error,
    },
    /// A status that is not a success (for `consult`, with the API's own message, the key
    /// blanked out).
    Status {
        url: Url,
        status: StatusCode,
        detail: Option<String>,
    },
}

/// Why `consult` could not ask the remote model. Credential errors name the credential,
/// never its value: no variant holds the key's bytes.
#[derive(Debug)]
pub enum ConsultError {
    /// The invocation has no consult target.
    NoTarget,
    /// The credential's name is not one plain file name.
    CredentialName {
        name: String,
    },
    /// `$CREDENTIALS_DIRECTORY` is not set.
    NoCredentials {
        name: String,
    },
    CredentialOpen {
        name: String,
        source: io::Error,
    },
    CredentialRead {
        name: String,
        source: io::Error,
    },
    CredentialTooLarge {
        name: String,
        limit: usize,
    },
    CredentialNotUtf8 {
        name: String,
        source: Utf8Error,
    },
    CredentialEmpty {
        name: String,
    },
    /// Holds a byte an HTTP header cannot carry.
    CredentialNotHeader {
        name: String,
    },
    /// The request body cannot be encoded.
    Encode(serde_json::Error),
    ResponseTooLarge {
        url: Url,
        limit: usize,
    },
    NotCompletion {
        url: Url,
        source: serde_json::Error,
    },
    NoChoices {
        url: Url,
    },
    NoContent {
        url: Url,
    },
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { limit } => write!(f, "the invocation is larger than {limit} bytes"),
            Self::Invocation(e) => write!(f, "invalid invocation: {e}"),
            Self::Tool { tool, source } => write!(f, "{tool}: {source}"),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(e) => e.fmt(f),
            Self::Net(e) => e.fmt(f),
            Self::Consult(e) => e.fmt(f),
            // "8 KiB" is BINARY_PROBE.
            Self::Binary => {
                f.write_str("not UTF-8 text (a NUL byte in the first 8 KiB: binary content)")
            }
            Self::NoNotesDir => f.write_str("the invocation names no notes directory"),
            Self::Staged => f.write_str(
                "this tool runs only as the stages brokerd sends (look, commit, run); a plain \
                 invocation of it is never executed",
            ),
            Self::NoteTooLarge { size } => write!(
                f,
                "the note is {size} bytes, over the {} a note may hold (not read)",
                proto::notes::MAX_NOTE
            ),
            Self::Search(e) => e.fmt(f),
        }
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAbsolute { path } => write!(f, "{path} is not an absolute path"),
            Self::ParentDir { path } => write!(f, "{path} has a .. component"),
            Self::Outside { path } => write!(f, "{path} is outside the granted paths"),
            // The target itself is not named: it may be outside what the owner granted.
            Self::Symlink { path } => write!(
                f,
                "{} goes through a symlink below the granted directory; links are not followed",
                path.display()
            ),
            Self::Io { path, source } => match source.kind() {
                io::ErrorKind::NotFound => write!(f, "{} does not exist", path.display()),
                io::ErrorKind::PermissionDenied => {
                    write!(f, "{}: permission denied", path.display())
                }
                _ => write!(f, "{}: {source}", path.display()),
            },
            Self::IsDirectory { path } => {
                write!(f, "{} is a directory, use list_dir", path.display())
            }
            Self::NotRegular { path } => write!(f, "{} is not a regular file", path.display()),
            Self::Changed { path } => {
                write!(f, "{} changed while it was opened", path.display())
            }
            Self::NotDirectory { path } => {
                write!(f, "{} is not a directory, use read_file", path.display())
            }
        }
    }
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUrl { text, source } => write!(f, "invalid URL {text:?}: {source}"),
            Self::Scheme { text } => write!(f, "{text}: only http and https URLs are fetched"),
            Self::NoHost { text } => write!(f, "{text}: the URL has no host"),
            Self::NoPort { url } => write!(f, "{url}: no port"),
            Self::BadAddress { text, .. } => {
                write!(f, "the granted address {text:?} is not a socket address")
            }
            Self::NoAddresses { host } => write!(f, "no addresses were granted for {host}"),
            Self::WrongPort { host, port } => {
                write!(
                    f,
                    "none of the granted addresses for {host} is on port {port}"
                )
            }
            Self::Request {
                url,
                timeout_ms,
                source,
            } => match &**source {
                ureq::Error::Timeout(_) => write!(f, "{url}: timed out after {timeout_ms} ms"),
                ureq::Error::Io(io) => write!(f, "{url}: {}", IoWords(io, *timeout_ms)),
                other => write!(f, "{url}: {other}"),
            },
            Self::Body {
                url,
                timeout_ms,
                source,
            } => write!(f, "{url}: {}", IoWords(source, *timeout_ms)),
            Self::Status {
                url,
                status,
                detail,
            } => {
                write!(f, "{url}: HTTP {}", status_words(*status))?;
                match detail {
                    Some(detail) => write!(f, ": {detail}"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl fmt::Display for ConsultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoTarget => {
                f.write_str("the invocation names no remote model (consult target missing)")
            }
            Self::CredentialName { name } => {
                write!(f, "the credential name {name:?} is not a plain file name")
            }
            Self::NoCredentials { name } => write!(
                f,
                "$CREDENTIALS_DIRECTORY is not set: the unit was started without the credential \
                 {name:?} (LoadCredential)"
            ),
            Self::CredentialOpen { name, source } => write!(
                f,
                "cannot read the credential {name:?} from $CREDENTIALS_DIRECTORY: {source}"
            ),
            Self::CredentialRead { name, source } => {
                write!(f, "cannot read the credential {name:?}: {source}")
            }
            Self::CredentialTooLarge { name, limit } => {
                write!(f, "the credential {name:?} is larger than {limit} bytes")
            }
            Self::CredentialNotUtf8 { name, .. } => {
                write!(f, "the credential {name:?} is not UTF-8 text")
            }
            Self::CredentialEmpty { name } => write!(f, "the credential {name:?} is empty"),
            Self::CredentialNotHeader { name } => write!(
                f,
                "the credential {name:?} holds characters an HTTP header cannot carry"
            ),
            Self::Encode(e) => write!(f, "cannot encode the request: {e}"),
            Self::ResponseTooLarge { url, limit } => {
                write!(f, "{url}: the response is larger than {limit} bytes")
            }
            Self::NotCompletion { url, source } => {
                write!(f, "{url}: not a chat completion: {source}")
            }
            Self::NoChoices { url } => write!(f, "{url}: the completion has no choices"),
            Self::NoContent { url } => {
                write!(f, "{url}: the completion's message has no content")
            }
        }
    }
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

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::TooLarge { .. } => None,
            Self::Invocation(e) => Some(e),
            Self::Tool { source, .. } => Some(&**source),
        }
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::File(e) => e.source(),
            Self::Net(e) => e.source(),
            Self::Consult(e) => e.source(),
            Self::Search(e) => e.source(),
            Self::Binary | Self::NoNotesDir | Self::Staged | Self::NoteTooLarge { .. } => None,
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::NotAbsolute { .. }
            | Self::ParentDir { .. }
            | Self::Outside { .. }
            | Self::Symlink { .. }
            | Self::IsDirectory { .. }
            | Self::NotRegular { .. }
            | Self::Changed { .. }
            | Self::NotDirectory { .. } => None,
        }
    }
}

impl std::error::Error for NetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::InvalidUrl { source, .. } => Some(source),
            Self::BadAddress { source, .. } => Some(source),
            Self::Request { source, .. } => Some(&**source),
            Self::Body { source, .. } => Some(source),
            Self::Scheme { .. }
            | Self::NoHost { .. }
            | Self::NoPort { .. }
            | Self::NoAddresses { .. }
            | Self::WrongPort { .. }
            | Self::Status { .. } => None,
        }
    }
}

impl std::error::Error for ConsultError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::CredentialOpen { source, .. } | Self::CredentialRead { source, .. } => {
                Some(source)
            }
            Self::CredentialNotUtf8 { source, .. } => Some(source),
            Self::Encode(source) | Self::NotCompletion { source, .. } => Some(source),
            Self::NoTarget
            | Self::CredentialName { .. }
            | Self::NoCredentials { .. }
            | Self::CredentialTooLarge { .. }
            | Self::CredentialEmpty { .. }
            | Self::CredentialNotHeader { .. }
            | Self::ResponseTooLarge { .. }
            | Self::NoChoices { .. }
            | Self::NoContent { .. } => None,
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
