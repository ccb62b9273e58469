//! Why a run of the indexer failed. Nothing it fails on is lost: the notes and logs are the
//! source of truth, each partition's change is one transaction, and the next run redoes
//! what this one did not record. `main` prints it once and exits with its status
//! ([`daemon::exit::Status`]); each text prints what it wraps (docs/decisions.md F16).

use std::path::{Path, PathBuf};

use config::ConfigError;
use noteindex::IndexError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot be read or is not valid.
    #[error("{0}")]
    Config(ConfigError),
    /// A directory or file of the index (or a source directory) could not be read or
    /// written.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A working partition failed (a full disk, say).
    #[error("{0}")]
    Index(IndexError),
}

impl Error {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |error| Self::Io {
            path: path.to_owned(),
            error,
        }
    }
}

impl daemon::exit::Status for Error {
    /// Every variant is listed, so a new one is given its status on purpose: 1, nothing is
    /// lost and the next run goes on (the table is in `main.rs`).
    fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::Io { .. } | Self::Index(_) => 1,
        }
    }
}

impl From<IndexError> for Error {
    fn from(e: IndexError) -> Self {
        Self::Index(e)
    }
}
