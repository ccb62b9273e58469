//! Why bxctl could not do what was asked: one variant per thing that can go wrong, each
//! with what it was about. `main` prints it once, as `bxctl: …`, and exits with its status
//! ([`daemon::exit::Status`]): 2 (could not do it), or 1 for a request the server refused; a
//! thing checked and found bad is no error, its command returns 1 itself. Each text prints
//! what it wraps, which `source()` does not return (docs/decisions.md F16).
//! Text that comes in part from a peer (a refusal's detail, a decode error quoting a frame)
//! is shown as one inert line. `bxctl dev`'s own reasons are [`DevError`] (`deverror`), a
//! module of its own, so that `dev` and this module do not import each other.

use std::io;
use std::path::PathBuf;

use config::ConfigError;

pub use crate::deverror::DevError;
use daemon::conn::CallError;
use proto::{ErrorCode, WireError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Config(ConfigError),
    /// No configuration file at `path`; `from` says who named it.
    #[error(
        "no configuration at {} ({from})\n\
         help: name the file with --config PATH or BOXMAKER_CONFIG=PATH; for the stack \
         `bxctl dev` runs, that is STATE/config.toml (it prints the export line)",
        path.display()
    )]
    NoConfig { path: PathBuf, from: String },
    /// Writing what bxctl prints.
    #[error("{0}")]
    Output(io::Error),
    /// A session id given on the command line.
    #[error("{0}")]
    SessionId(proto::InvalidValue),
    /// A file or directory bxctl reads.
    #[error("{}: {error}", path.display())]
    File { path: PathBuf, error: io::Error },
    /// `server`'s socket at `path` could not be connected to.
    #[error("{}", reach(server, path, error))]
    Reach {
        server: &'static str,
        path: PathBuf,
        error: io::Error,
    },
    /// `server` refused the connection; `peers.{peers}` decides who may connect.
    #[error("{}", refused(server, peers, refusal))]
    Refused {
        server: &'static str,
        peers: &'static str,
        refusal: WireError,
    },
    /// The call broke: a frame not sent, not read or not understood.
    #[error("{}", inert::line(&.0.to_string()))]
    Call(CallError),
    /// `server` answered the request with an error.
    #[error("{server} refused: {}: {}", refusal.code.name(), inert::line(&refusal.detail))]
    Answered {
        server: &'static str,
        refusal: WireError,
    },
    /// An answer of a kind this request never gets.
    #[error("unexpected answer {kind}")]
    Unexpected { kind: &'static str },
    /// More approvals wait than one listing carries.
    #[error("{omitted} more approvals wait than fit in one answer; answer some and list again")]
    Omitted { omitted: u32 },
    /// The chat prompt.
    #[error("{0}")]
    Prompt(rustyline::error::ReadlineError),
    /// What was asked cannot be done as given (an approval prefix too short).
    #[error("{0}")]
    Usage(String),
    /// `bxctl dev`.
    #[error("{0}")]
    Dev(DevError),
    /// `bxctl gateway setup` could not find what it looked up.
    #[error("{0}")]
    Setup(Box<crate::gateway::SetupError>),
    /// The grants directory to check cannot be read; `from` says who named it.
    #[error(
        "cannot read the grants directory {} ({from}): {error}\nhelp: name the \
         directory that holds the grant files, `bxctl grants check DIR`, or set \
         `grants` in the configuration (docs/grants.md)",
        path.display()
    )]
    GrantsDir {
        path: PathBuf,
        from: &'static str,
        error: io::Error,
    },
    /// loopd keeps no log of this session; `recent` are the most recently active ones;
    /// `chat` when a chat was to continue it.
    #[error("{}", no_session(session, recent, *chat))]
    NoSession {
        session: proto::SessionId,
        recent: Vec<proto::SessionId>,
        chat: bool,
    },
    /// `--continue` with no session at all.
    #[error(
        "no session to continue: loopd keeps none yet\nhelp: leave out --continue to \
         start one"
    )]
    NothingToContinue,
}

impl daemon::exit::Status for Error {
    /// The status `main` exits with: 2, bxctl could not do what was asked (usage, I/O, a
    /// peer it cannot reach).
    fn exit_code(&self) -> u8 {
        match self {
            // The server heard the request and refused it (`no session X`, a kind this
            // socket does not take): a refused request. A server that failed is not.
            Self::Answered { refusal, .. } if refusal.code != ErrorCode::Internal => 1,
            // Asked of a session that is not there: a refused request.
            Self::NoSession { .. } | Self::NothingToContinue => 1,
            _ => 2,
        }
    }
}

/// Why `server`'s socket at `path` could not be connected to, and what to do about it.
fn reach(server: &str, path: &std::path::Path, error: &io::Error) -> String {
    let text = format!("cannot reach {server} at {}: {error}", path.display());
    match reach_help(server, path, error) {
        Some(help) => format!("{text}\nhelp: {help}"),
        None => text,
    }
}

/// A refused connection in the server's words, as one inert line (it names users and
/// groups), with the help its code calls for.
fn refused(server: &str, peers: &str, refusal: &WireError) -> String {
    let help = match refusal.code {
        ErrorCode::Refused => format!(
            "run bxctl as the user, or as a member of the group, that `peers.{peers}` \
             in the configuration names (after joining a group, log in again)"
        ),
        ErrorCode::Unavailable => "try again in a moment".to_owned(),
        _ => format!("{server}'s log says more"),
    };
    format!(
        "{server} refused the connection ({}): {}\nhelp: {help}",
        refusal.code.name(),
        inert::line(&refusal.detail)
    )
}

/// No log of `session`: the most recent ones, and how to start anew when chatting.
fn no_session(session: &proto::SessionId, recent: &[proto::SessionId], chat: bool) -> String {
    let mut text = format!("no session {session}: loopd keeps no log of it\nhelp: ");
    if recent.is_empty() {
        text.push_str("there are no sessions yet");
    } else {
        let ids: Vec<String> = recent.iter().map(ToString::to_string).collect();
        text.push_str(&format!("the most recent are {}", ids.join(", ")));
    }
    if chat {
        text.push_str("; leave out --session to start a new one");
    }
    text
}

/// What to do when `server`'s socket at `path` cannot be connected to, by why: nobody
/// listens (the stack is not running), or the socket's directory is closed to this user
/// (join its group).
fn reach_help(server: &str, path: &std::path::Path, source: &io::Error) -> Option<String> {
    let unit = match server {
        "brokerd" => "boxmaker-brokerd-admin.socket",
        _ => "boxmaker-loopd.socket",
    };
    match source.kind() {
        io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound => Some(format!(
            "is the stack running? Start it with `bxctl dev` (development), or under systemd \
             see `systemctl status {unit}`"
        )),
        io::ErrorKind::PermissionDenied => {
            // The socket's directory admits its group only: name it.
            let group = path
                .parent()
                .and_then(|d| std::fs::metadata(d).ok())
                .map(|m| std::os::unix::fs::MetadataExt::gid(&m))
                .and_then(|gid| nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid)).ok())
                .flatten()
                .map(|g| g.name);
            Some(match group {
                Some(g) => format!(
                    "join the group `{g}` that may enter {} (`usermod -aG {g} $USER`), then log \
                     in again",
                    path.parent().unwrap_or(path).display()
                ),
                None => format!(
                    "run bxctl as a user who may enter {}, then log in again",
                    path.parent().unwrap_or(path).display()
                ),
            })
        }
        _ => None,
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

impl From<DevError> for Error {
    fn from(e: DevError) -> Self {
        Self::Dev(e)
    }
}

/// A failed call to `server` (brokerd, loopd), for the owner: a connection the server
/// refused says so in the server's words, with a `help:` line naming the setting
/// (`peers.{peers}`) that decides who may connect.
pub(crate) fn call_failed(
    server: &'static str,
    peers: &'static str,
) -> impl Fn(CallError) -> Error {
    move |e| match e {
        CallError::Refused(refusal) => Error::Refused {
            server,
            peers,
            refusal,
        },
        other => Error::Call(other),
    }
}

/// What `server` answered when it is an error, else the answer.
pub(crate) fn answered(server: &'static str, msg: proto::Message) -> Result<proto::Message, Error> {
    match msg {
        proto::Message::Error(refusal) => Err(Error::Answered { server, refusal }),
        other => Ok(other),
    }
}

/// An answer of a kind the request never gets.
pub(crate) fn unexpected(msg: &proto::Message) -> Error {
    Error::Unexpected { kind: msg.kind() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reason a socket cannot be reached gets the help that fixes it: a stack to
    /// start, or the group of the socket's directory to join.
    #[test]
    fn unreachable_sockets_say_what_to_do() {
        let dir = std::env::temp_dir().join(format!("bx-help-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let sock = dir.join("broker.sock");
        for kind in [io::ErrorKind::ConnectionRefused, io::ErrorKind::NotFound] {
            let e = Error::Reach {
                server: "brokerd",
                path: sock.clone(),
                error: io::Error::from(kind),
            };
            let text = e.to_string();
            assert!(
                text.ends_with(
                    "\nhelp: is the stack running? Start it with `bxctl dev` (development), or \
                     under systemd see `systemctl status boxmaker-brokerd-admin.socket`"
                ),
                "{text}"
            );
        }
        let gid = std::os::unix::fs::MetadataExt::gid(&std::fs::metadata(&dir).expect("meta"));
        let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
            .expect("group lookup")
            .expect("the directory's group has a name")
            .name;
        let e = Error::Reach {
            server: "loopd",
            path: sock,
            error: io::Error::from(io::ErrorKind::PermissionDenied),
        };
        assert!(
            e.to_string().ends_with(&format!(
                "\nhelp: join the group `{group}` that may enter {} (`usermod -aG {group} \
                 $USER`), then log in again",
                dir.display()
            )),
            "{e}"
        );
        let other = Error::Reach {
            server: "loopd",
            path: dir.join("x"),
            error: io::Error::from(io::ErrorKind::TimedOut),
        };
        assert!(!other.to_string().contains("help:"), "{other}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
