//! Listening sockets: taken from systemd (socket activation) when it hands them over, else
//! bound here (development, `bxctl dev`). Sockets are found by name (FileDescriptorName= in
//! the .socket unit, LISTEN_FDNAMES), so the order of units never matters.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The sockets systemd handed over, by name.
#[derive(Debug, Default)]
pub struct Inherited {
    by_name: HashMap<String, UnixListener>,
    activated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// systemd handed over sockets, but none with this name.
    #[error(
        "systemd passed sockets {have:?} but none named {name:?} \
         (FileDescriptorName= in the .socket unit)"
    )]
    Missing { name: String, have: Vec<String> },
    #[error("inherited socket {name:?} is not a Unix listener: {error}")]
    Inherit { name: String, error: io::Error },
    #[error("cannot listen on {}: {error}", path.display())]
    Bind { path: PathBuf, error: io::Error },
    /// Something other than a socket is in the way of the socket path.
    #[error("{} exists and is not a socket; not replacing it", path.display())]
    NotASocket { path: PathBuf },
    /// A live process still listens on the socket at this path (another stack, or this
    /// role started twice): it is left alone.
    #[error(
        "{} is in use: another process listens on it; not replacing it \
         (stop that process first)",
        path.display()
    )]
    InUse { path: PathBuf },
}

impl Inherited {
    /// Takes what systemd passed. Call it before any thread starts: it reads and clears
    /// LISTEN_FDS and LISTEN_PID, and environment changes are not safe once threads exist.
    pub fn from_env() -> Result<Self, ListenError> {
        let names = std::env::var("LISTEN_FDNAMES").unwrap_or_default();
        let mut fds = listenfd::ListenFd::from_env();
        let mut by_name = HashMap::new();
        let activated = fds.len() > 0;
        for idx in 0..fds.len() {
            let name = names
                .split(':')
                .nth(idx)
                .filter(|n| !n.is_empty())
                .map_or_else(|| format!("fd{idx}"), str::to_owned);
            match fds.take_unix_listener(idx) {
                Ok(Some(l)) => {
                    by_name.insert(name, l);
                }
                Ok(None) => {}
                Err(error) => return Err(ListenError::Inherit { name, error }),
            }
        }
        Ok(Self { by_name, activated })
    }

    /// Whether systemd passed any socket at all.
    pub fn activated(&self) -> bool {
        self.activated
    }

    /// The socket named `name` when systemd passed sockets; otherwise binds `path`.
    /// Under socket activation a missing name is an error, never a silent bind.
    pub fn take_or_bind(&mut self, name: &str, path: &Path) -> Result<UnixListener, ListenError> {
        if self.activated {
            let mut have: Vec<String> = self.by_name.keys().cloned().collect();
            have.sort();
            return self.by_name.remove(name).ok_or(ListenError::Missing {
                name: name.to_owned(),
                have,
            });
        }
        bind(path)
    }
}

/// Binds a Unix socket at `path`, replacing a stale socket left by an earlier run (but
/// nothing else, and never one a live process still listens on: a socket is stale only
/// when connecting to it is refused). Access is decided by the directory's permissions, so
/// the socket itself is 0660.
pub fn bind(path: &Path) -> Result<UnixListener, ListenError> {
    let err = |error| ListenError::Bind {
        path: path.to_owned(),
        error,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match UnixStream::connect(path) {
            Ok(_) => {
                return Err(ListenError::InUse {
                    path: path.to_owned(),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path).map_err(err)?;
            }
            // Gone meanwhile: nothing to replace.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            // Whether anyone listens cannot be told (no permission, say): leave it.
            Err(e) => return Err(err(e)),
        },
        Ok(_) => {
            return Err(ListenError::NotASocket {
                path: path.to_owned(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e)),
    }
    let listener = UnixListener::bind(path).map_err(err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660)).map_err(err)?;
    Ok(listener)
}
