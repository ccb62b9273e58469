//! Why an MCP session with a server failed. Every variant says what it is about; the
//! server's own words (an error message) are cut to [`MAX_SERVER_WORDS`] characters.

use std::time::Duration;

/// The most characters of a server's error message kept in an error.
pub const MAX_SERVER_WORDS: usize = 512;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server closed its output (or the connection) while an answer was due.
    #[error("the MCP server closed its output while {waiting_for} was due")]
    Closed { waiting_for: String },
    /// Reading from or writing to the server failed.
    #[error("talking to the MCP server failed: {detail}")]
    Io { detail: String },
    /// The deadline passed while an answer was due.
    #[error(
        "the MCP server gave no {waiting_for} in time (timed out after {} ms)",
        after.as_millis()
    )]
    Timeout {
        waiting_for: String,
        after: Duration,
    },
    /// One message was longer than the limit (nothing of it is kept).
    #[error("the MCP server sent a message larger than {limit} bytes (not read)")]
    MessageTooLarge { limit: usize },
    /// Everything the server sent in this session together passed the limit.
    #[error("the MCP server sent more than {limit} bytes in this session (stopped)")]
    OutputTooLarge { limit: u64 },
    /// The server sent something that is not the protocol.
    #[error("the MCP server broke the protocol: {detail}")]
    Protocol { detail: String },
    /// The server answered `initialize` with a protocol version this client does not speak.
    #[error(
        "the MCP server speaks protocol version {offered:?}, not {}",
        crate::PROTOCOL_VERSION
    )]
    Version { offered: String },
    /// The server answered a request of ours with a JSON-RPC error.
    #[error("the MCP server answered {method} with error {code}: {message}")]
    Server {
        method: String,
        code: i64,
        message: String,
    },
    /// More tools than the limit.
    #[error("the MCP server lists more than {limit} tools")]
    TooManyTools { limit: usize },
    /// More pages of `tools/list` than the limit.
    #[error("the MCP server's tool list takes more than {limit} pages")]
    TooManyPages { limit: usize },
    /// More requests from the server than the limit (each was refused).
    #[error("the MCP server made more than {limit} requests of the client (each refused)")]
    TooManyRequests { limit: usize },
}

impl McpError {
    pub(crate) fn protocol(detail: impl Into<String>) -> Self {
        Self::Protocol {
            detail: detail.into(),
        }
    }

    /// The server's words, cut to [`MAX_SERVER_WORDS`] characters.
    pub(crate) fn server(method: &str, code: i64, message: &str) -> Self {
        let mut words: String = message.chars().take(MAX_SERVER_WORDS).collect();
        if words.len() < message.len() {
            words.push('…');
        }
        Self::Server {
            method: method.to_owned(),
            code,
            message: words,
        }
    }
}
