//! A channel's registration of the owner's words (docs/decisions.md X4): before `bxctl chat`
//! or gatewayd hands the owner's message to loopd, it tells brokerd the message's digest on
//! `sockets.chat_broker/broker.sock`, and sends it only once brokerd has it on disk. loopd
//! cannot add owner messages of its own: a user message no channel registered counts, in
//! brokerd's accounting, as the highest label loopd was ever sent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use proto::Message;
use proto::attest::OwnerMessage;

use daemon::conn::{CallError, Conn};

/// How long brokerd may take to put a registration on disk.
const DEADLINE: Duration = Duration::from_secs(10);

/// Why a registration did not happen. Each text prints what it wraps, which `source()`
/// does not return (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// The socket could not be reached.
    #[error("{}: {error}", sock.display())]
    Connect {
        sock: PathBuf,
        error: std::io::Error,
    },
    /// The request failed on the wire, or brokerd refused it.
    #[error("{0}")]
    Call(CallError),
    /// brokerd answered something else.
    #[error("brokerd answered {0}")]
    Answered(&'static str),
}

/// Registers the owner's `text` with brokerd at `sock`; `Ok` once it is on disk.
pub fn register(sock: &Path, text: &str) -> Result<(), RegisterError> {
    let stream =
        std::os::unix::net::UnixStream::connect(sock).map_err(|error| RegisterError::Connect {
            sock: sock.to_owned(),
            error,
        })?;
    let mut conn = Conn::new(stream, DEADLINE, DEADLINE);
    let msg = OwnerMessage::of(text);
    let want = msg.digest;
    match conn.call(1, Message::OwnerMessage(msg), |_| {}) {
        Ok(env) => match env.msg {
            Message::OwnerRegistered(r) if r.digest == want => Ok(()),
            other => Err(RegisterError::Answered(other.kind())),
        },
        Err(e) => Err(RegisterError::Call(e)),
    }
}
