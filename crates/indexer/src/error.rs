//! Why a run of the indexer failed. Nothing it fails on is lost: the notes and logs are the
//! source of truth, each partition's change is one transaction, and the next run redoes
//! what this one did not record.

use std::fmt;
use std::path::{Path, PathBuf};

use config::ConfigError;
use noteindex::IndexError;

#[derive(Debug)]
pub enum Error {
    /// The configuration cannot be read or is not valid.
    Config(ConfigError),
    /// A directory or file of the index (or a source directory) could not be read or
    /// written.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A working partition failed (a full disk, say).
    Index(IndexError),
}

impl Error {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_owned(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Index(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::Io { source, .. } => Some(source),
            Self::Index(e) => Some(e),
        }
    }
}

impl From<IndexError> for Error {
    fn from(e: IndexError) -> Self {
        Self::Index(e)
    }
}
