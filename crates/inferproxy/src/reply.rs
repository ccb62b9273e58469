//! The answers inferproxy gives itself: a status and a short JSON body in llama-server's
//! own error shape (`{"error":{"code","message","type"}}`), so loopd reads one kind of
//! error. The message is always one of ours, never a peer's bytes or internal error text.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use daemon::accept::{Refusal, Refuse};
use daemon::log;

/// The `type` of an error body, after OpenAI's and llama-server's names where they have one.
fn kind(status: u16) -> &'static str {
    match status {
        400 | 431 | 505 => "invalid_request_error",
        403 => "forbidden",
        408 => "timeout_error",
        413 => "request_too_large",
        417 | 501 => "not_supported_error",
        502 => "bad_gateway",
        503 => "unavailable_error",
        504 => "gateway_timeout",
        _ => "server_error",
    }
}

/// The whole answer: head (`Connection: close`) and body.
pub(crate) fn error_bytes(status: u16, message: &'static str) -> Vec<u8> {
    typed_error_bytes(status, kind(status), message)
}

/// [`error_bytes`] with its own `type` and a message that may name what the client sent
/// (escaped as JSON).
pub(crate) fn typed_error_bytes(status: u16, kind: &str, message: &str) -> Vec<u8> {
    let body = serde_json::json!({"error": {"code": status, "message": message, "type": kind}})
        .to_string();
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json; charset=utf-8\r\n\
         Content-Length: {}\r\n{}: {}\r\nConnection: close\r\n\r\n",
        strict_http::reason(status),
        body.len(),
        proto::status::INFERPROXY_VERSION_HEADER,
        env!("CARGO_PKG_VERSION"),
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// How much of a refused request is read and thrown away before closing, and for how long.
const DRAIN_BYTES: usize = 1024 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// Sends an error answer and closes gently. Closing a Unix socket with unread bytes in it
/// resets the connection, and the client may then never read the answer; so our side is
/// shut for writing (the client sees the end of the answer) and what the client still
/// sends is read and dropped, within [`DRAIN_BYTES`] and [`DRAIN_TIME`].
pub(crate) fn error(stream: &UnixStream, status: u16, message: &'static str) {
    send_and_close(stream, &error_bytes(status, message));
}

/// A chat request inferproxy will not witness: 400, type `unwitnessable_request`, the
/// message naming the field.
pub(crate) fn unwitnessable(stream: &UnixStream, why: &proto::attest::Unwitnessable) {
    let message = why.to_string();
    send_and_close(
        stream,
        &typed_error_bytes(400, "unwitnessable_request", &message),
    );
}

fn send_and_close(stream: &UnixStream, answer: &[u8]) {
    // The peer may be gone already; there is nobody left to tell.
    let _ = (&*stream).write_all(answer);
    let _ = stream.shutdown(Shutdown::Write);
    let until = Instant::now() + DRAIN_TIME;
    let mut buf = [0u8; 8192];
    let mut drained = 0;
    while drained < DRAIN_BYTES {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match (&*stream).read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => drained += n,
        }
    }
}

/// How many refused connections may wait for their answer.
const REFUSED_QUEUE: usize = 64;

/// inferproxy's refusals before a request is read (the shared accept loop's): 503 while
/// stopping or past `infer.max_connections`, 403 for a peer other than loopd. Each is
/// answered by [`error`], which can take up to [`DRAIN_TIME`]; so they are answered one at a
/// time on a thread of their own, and neither the accept loop waits nor a flood of them
/// starts threads. Past the queue a connection is closed unanswered.
#[derive(Debug)]
pub(crate) struct Refusals(Option<SyncSender<(UnixStream, u16, &'static str)>>);

impl Refusals {
    /// Starts the thread that answers them; without it they are closed unanswered.
    pub fn start() -> Self {
        let (tx, rx) = mpsc::sync_channel::<(UnixStream, u16, &'static str)>(REFUSED_QUEUE);
        let spawned = std::thread::Builder::new()
            .name("refused".into())
            .spawn(move || {
                for (stream, status, message) in rx {
                    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                    error(&stream, status, message);
                }
            });
        match spawned {
            Ok(_) => Self(Some(tx)),
            Err(e) => {
                log::error(format_args!("cannot start the refusal thread: {e}"));
                Self(None)
            }
        }
    }
}

impl Refuse for Refusals {
    fn refuse(&self, _: &str, stream: UnixStream, why: &Refusal<'_>) {
        let (status, message) = match why {
            Refusal::Stopping => (503, "inferproxy is stopping"),
            Refusal::Full { .. } => (503, "too many connections"),
            Refusal::NotAdmitted { .. } | Refusal::Unidentified => {
                (403, "this socket does not admit you")
            }
        };
        if let Some(tx) = &self.0
            && let Err(TrySendError::Full(_)) = tx.try_send((stream, status, message))
        {
            log::warn(format_args!(
                "too many refused connections; closing one unanswered"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_answer_parses_as_one() {
        let bytes = error_bytes(403, "forbidden path");
        let mut reader = &bytes[..];
        let head = strict_http::read_response_head(&mut reader).expect("head");
        assert_eq!((head.status, head.reason.as_str()), (403, "Forbidden"));
        assert_eq!(head.headers.get("connection"), Some("close"));
        assert_eq!(
            reader,
            br#"{"error":{"code":403,"message":"forbidden path","type":"forbidden"}}"#
        );
    }
}
