//! Talking to the model through inferproxy (HTTP over infer.sock): the request built from
//! the session log, and the streamed answer parsed chunk by chunk.

use std::io;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proto::attest::{Answer, AnswerError, COMPLETION_HEADER, CompletionId};
use serde::Deserialize;
use serde_json::Value;
use strict_http::{HttpError, SseReader};

use crate::cancel::Cancel;

/// Why the model could not answer. The session stays as it was. The `Display` text is
/// what the owner reads in the turn's `model_error`.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// infer.sock cannot be connected to.
    #[error("{UNREACHABLE}: {}: {error}", sock.display())]
    Connect { sock: PathBuf, error: io::Error },
    /// The connection's read deadline cannot be set.
    #[error("{UNREACHABLE}: {0}")]
    Deadline(io::Error),
    /// The request could not be sent, or no answer head came back.
    #[error("{UNREACHABLE}: {0}")]
    Request(HttpError),
    /// The server answered with an error status (503 while loading, 5xx, 4xx).
    #[error("{}", status_text(*status, message))]
    Status { status: u16, message: String },
    /// The answer's body broke off or is not well-formed HTTP.
    #[error("{BROKE_OFF}: {0}")]
    Body(HttpError),
    /// The request body could not be encoded (it was not sent).
    #[error("{BROKE_OFF}: {0}")]
    Encode(serde_json::Error),
    /// `/props` is not the JSON llama-server sends.
    #[error("{BROKE_OFF}: /props: {0}")]
    Props(serde_json::Error),
    /// `/props` has no `n_ctx`.
    #[error("{BROKE_OFF}: /props has no n_ctx")]
    NoContextSize,
    /// An event that cannot be part of the answer (`proto::attest::answer`).
    #[error("{BROKE_OFF}: {0}")]
    Answer(AnswerError),
    /// The stream ended without `[DONE]`.
    #[error("{BROKE_OFF}: the stream ended before [DONE]")]
    NoDone,
    /// The answer's head named no completion (`x-boxmaker-completion`): inferproxy did not
    /// witness it, so none of its calls could run.
    #[error("{BROKE_OFF}: inferproxy named no completion")]
    NotWitnessed,
}

const UNREACHABLE: &str = "the model server cannot be reached";
const BROKE_OFF: &str = "the model's answer broke off";

/// An error status as the owner reads it: 503 is a server still loading.
fn status_text(status: u16, message: &str) -> String {
    match status {
        503 => format!("the model server is not ready (503): {message}"),
        _ => format!("the model server answered {status}: {message}"),
    }
}

impl LlmError {
    /// Whether the request no longer fits: the server's context (400
    /// `exceed_context_size_error`) or inferproxy's request limit (413).
    pub fn context_full(&self) -> bool {
        match self {
            Self::Status { status: 413, .. } => true,
            Self::Status {
                status: 400,
                message,
            } => message.contains("context") || message.contains("exceed"),
            _ => false,
        }
    }

    /// Whether the server refused to render the history because a tool call's arguments
    /// are not JSON (llama-server: 500 "Failed to parse tool call arguments as JSON: ...").
    pub fn unrenderable(&self) -> bool {
        matches!(self, Self::Status { status: 500, message }
            if message.starts_with(UNRENDERABLE))
    }
}

/// How llama-server's refusal to render tool-call arguments that are not JSON begins.
const UNRENDERABLE: &str = "Failed to parse tool call arguments as JSON";

impl From<HttpError> for LlmError {
    fn from(e: HttpError) -> Self {
        Self::Body(e)
    }
}

/// What `/props` says of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Props {
    pub n_ctx: u64,
    pub total_slots: u32,
}

#[derive(Deserialize)]
struct PropsBody {
    default_generation_settings: Option<GenSettings>,
    total_slots: Option<u32>,
}

#[derive(Deserialize)]
struct GenSettings {
    n_ctx: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    message: String,
}

fn connect(sock: &Path, timeout: Duration) -> Result<UnixStream, LlmError> {
    let stream = UnixStream::connect(sock).map_err(|error| LlmError::Connect {
        sock: sock.to_owned(),
        error,
    })?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(LlmError::Deadline)?;
    Ok(stream)
}

fn status_error<S: io::Read>(resp: strict_http::Response<S>) -> LlmError {
    let status = resp.status;
    let body = resp.read_body(64 * 1024).unwrap_or_default();
    let message = serde_json::from_slice::<ErrorBody>(&body)
        .map(|b| b.error.message)
        .unwrap_or_else(|_| String::from_utf8_lossy(&body).chars().take(200).collect());
    LlmError::Status { status, message }
}

pub fn props(sock: &Path, timeout: Duration) -> Result<Props, LlmError> {
    let resp = strict_http::request(connect(sock, timeout)?, "GET", "/props", &[], b"")
        .map_err(LlmError::Request)?;
    if resp.status != 200 {
        return Err(status_error(resp));
    }
    let body = resp.read_body(4 * 1024 * 1024)?;
    let p: PropsBody = serde_json::from_slice(&body).map_err(LlmError::Props)?;
    Ok(Props {
        n_ctx: p
            .default_generation_settings
            .and_then(|g| g.n_ctx)
            .ok_or(LlmError::NoContextSize)?,
        total_slots: p.total_slots.unwrap_or(1).max(1),
    })
}

pub use proto::attest::{Piece as Delta, Timings};

/// One answer of the model, assembled from the stream, and the completion inferproxy
/// witnessed it as (its `x-boxmaker-completion`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    pub answer: Answer,
    pub witness: Option<CompletionId>,
}

/// Sends one streamed chat completion and assembles the answer, handing each text and
/// reasoning piece to `on_delta` as it arrives.
pub fn complete(
    sock: &Path,
    timeout: Duration,
    body: &Value,
    cancel: Option<&Cancel>,
    mut on_delta: impl FnMut(Delta<'_>),
) -> Result<Completion, LlmError> {
    let bytes = serde_json::to_vec(body).map_err(LlmError::Encode)?;
    let headers = [("Content-Type", "application/json")];
    let stream = connect(sock, timeout)?;
    if let Some(c) = cancel {
        c.streaming(stream.try_clone().ok());
    }
    let resp = strict_http::request(stream, "POST", "/v1/chat/completions", &headers, &bytes)
        .map_err(LlmError::Request)?;
    if resp.status != 200 {
        return Err(status_error(resp));
    }
    let witness = resp
        .headers
        .get(COMPLETION_HEADER)
        .and_then(|v| CompletionId::new(v).ok())
        .ok_or(LlmError::NotWitnessed)?;
    let mut sse = SseReader::new(resp.body);
    let mut answer = Answer::default();
    let mut done = false;
    while let Some(event) = sse.next_event()? {
        if event.data == "[DONE]" {
            done = true;
            break;
        }
        answer
            .feed(&event.data, &mut on_delta)
            .map_err(LlmError::Answer)?;
    }
    if !done {
        return Err(LlmError::NoDone);
    }
    Ok(Completion {
        answer,
        witness: Some(witness),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_to_render_arguments_is_told_apart() {
        let status = |status, message: &str| LlmError::Status {
            status,
            message: message.into(),
        };
        let refused = status(
            500,
            "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] \
             parse error at line 1, column 14: syntax error while parsing value - invalid \
             string: missing closing quote; last read: '\"Ber'",
        );
        assert!(refused.unrenderable() && !refused.context_full());
        assert!(!status(500, "Failed to parse messages: x").unrenderable());
        assert!(!status(400, "Failed to parse tool call arguments as JSON").unrenderable());
        assert!(status(400, "request exceeds the available context size").context_full());
    }
}
