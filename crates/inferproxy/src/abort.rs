//! Why an exchange did not forward a whole answer, typed: [`Refused`] when the client gets
//! an error answer of ours (its status and one of our fixed messages), [`Cut`] when
//! llama-server's answer had started and the connection is closed short. `Display` is the
//! detail only the log gets: internal error text never goes to the client. It prints what
//! it wraps, which `source()` does not return (docs/decisions.md F16).

use std::io;
use std::net::SocketAddr;

use strict_http::HttpError;

use crate::upstream::Failure;
use crate::witness::WitnessError;

/// How many interim (1xx) answers llama-server may send before its real one.
pub(crate) const MAX_INTERIM: usize = 8;

const FORBIDDEN: &str = "inferproxy forwards only POST /v1/chat/completions, \
                         GET /health, GET /props and GET /v1/models";

/// Nothing of llama-server's answer reached the client: it gets one of our answers.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// The request is malformed, too large, too slow or of a version not understood.
    #[error("{0}")]
    Request(HttpError),
    /// The method and target are not on the allowlist.
    #[error("{method:?} {target:?} is not on the allowlist")]
    NotAllowed { method: String, target: String },
    /// An `Expect` other than `100-continue`.
    #[error("an Expect other than 100-continue: {value:?}")]
    Expect { value: String },
    /// llama-server did not accept the connection (in time).
    #[error("connect {addr}: {error}")]
    Connect { addr: SocketAddr, error: io::Error },
    /// The request could not be sent on to llama-server.
    #[error("sending the request: {0}")]
    Send(HttpError),
    /// llama-server answered 101 Switching Protocols.
    #[error("llama-server answered 101 Switching Protocols")]
    Switching,
    /// llama-server sent more than [`MAX_INTERIM`] interim answers.
    #[error("more than {MAX_INTERIM} interim answers")]
    Interim,
    /// llama-server's answer head did not come (in time) or was malformed.
    #[error("{0}")]
    Head(HttpError),
    /// The OS random source gave no completion id.
    #[error("OS RNG: {0}")]
    NoId(getrandom::Error),
}

impl Refused {
    /// The status the client gets.
    pub fn status(&self) -> u16 {
        match self {
            Self::Request(e) => e.status(),
            Self::NotAllowed { .. } => 403,
            Self::Expect { .. } => 417,
            Self::Connect { error, .. } if daemon::conn::is_timeout_io(error) => 504,
            Self::Head(e) if Failure::of(e) == Failure::Silent => 504,
            Self::Connect { .. } | Self::Send(_) | Self::Switching | Self::Interim => 502,
            Self::Head(_) => 502,
            Self::NoId(_) => 500,
        }
    }

    /// The message the client gets: always one of ours.
    pub fn message(&self) -> &'static str {
        match self {
            Self::Request(e) => match e.status() {
                408 => "the request did not arrive in time",
                413 => "the request body is too large",
                431 => "the request head is too large",
                501 => "only chunked transfer coding is understood",
                505 => "only HTTP/1.1 and HTTP/1.0 are understood",
                _ => "malformed request",
            },
            Self::NotAllowed { .. } => FORBIDDEN,
            Self::Expect { .. } => "only Expect: 100-continue is understood",
            Self::Connect { .. } if self.status() == 504 => {
                "llama-server did not accept the connection in time"
            }
            Self::Connect { .. } | Self::Send(_) => "llama-server is not reachable",
            Self::Head(_) if self.status() == 504 => "llama-server did not answer in time",
            Self::Switching | Self::Interim | Self::Head(_) => "llama-server answered badly",
            Self::NoId(_) => "inferproxy cannot name the completion to witness it",
        }
    }
}

/// llama-server's answer had started (or the client left before it could): the client
/// connection is closed short, which the client sees as a cut body.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Cut {
    /// The client went away while the answer's head was awaited.
    #[error("{0}")]
    Left(HttpError),
    /// The answer's head could not be written to the client.
    #[error("writing the head to the client: {0}")]
    WriteHead(HttpError),
    /// The answer's framing cannot be read.
    #[error("{0}")]
    Framing(HttpError),
    /// Reading the answer's body failed (llama-server, or a client that left meanwhile).
    #[error("{}", upstream_text(.0))]
    Upstream(HttpError),
    /// Writing the body to the client failed.
    #[error("the client went away: {0}")]
    Client(io::Error),
    /// The completion could not be witnessed: the stream ends without `[DONE]`.
    #[error("not witnessed, so no [DONE]: {0}")]
    Witness(WitnessError),
}

/// A failed read of the answer's body: llama-server's, or the client's that left while
/// llama-server was awaited.
fn upstream_text(e: &HttpError) -> String {
    if Failure::of(e) == Failure::ClientGone {
        format!("while waiting for llama-server: {e}")
    } else {
        format!("llama-server: {e}")
    }
}

/// What an error before llama-server's answer head means.
pub(crate) fn before_head(e: HttpError) -> Abort {
    match Failure::of(&e) {
        Failure::ClientGone => Abort::Cut(Cut::Left(e)),
        Failure::Silent | Failure::Broken => Abort::Refused(Refused::Head(e)),
    }
}

/// How a relay ended short.
#[derive(Debug)]
pub(crate) enum Abort {
    /// Nothing was sent to the client yet: it gets our answer.
    Refused(Refused),
    /// The answer had started.
    Cut(Cut),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::Silent;

    #[test]
    fn each_refusal_has_its_status_our_message_and_the_detail_for_the_log() {
        let addr: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        let connect = |kind| Refused::Connect {
            addr,
            error: io::Error::from(kind),
        };
        let silent = HttpError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            Silent {
                before_first_byte: true,
            },
        ));
        let broken = HttpError::Io(io::ErrorKind::ConnectionReset.into());
        let not_allowed = Refused::NotAllowed {
            method: "GET".into(),
            target: "/slots".into(),
        };
        for (why, status, message) in [
            (not_allowed, 403, FORBIDDEN),
            (
                connect(io::ErrorKind::TimedOut),
                504,
                "llama-server did not accept the connection in time",
            ),
            (
                connect(io::ErrorKind::ConnectionRefused),
                502,
                "llama-server is not reachable",
            ),
            (
                Refused::Head(silent),
                504,
                "llama-server did not answer in time",
            ),
            (Refused::Head(broken), 502, "llama-server answered badly"),
            (Refused::Interim, 502, "llama-server answered badly"),
        ] {
            assert_eq!((why.status(), why.message()), (status, message), "{why}");
        }
        let detail = connect(io::ErrorKind::ConnectionRefused).to_string();
        assert!(detail.starts_with("connect 127.0.0.1:9: "), "{detail}");
        let detail = Refused::NotAllowed {
            method: "GET".into(),
            target: "/slots".into(),
        }
        .to_string();
        assert_eq!(detail, "\"GET\" \"/slots\" is not on the allowlist");
    }
}
