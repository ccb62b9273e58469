//! Why a run could not even begin. A run that begins and fails is not an error here: it is
//! delivered as a failure and the runner exits 1 (`Finished::Failed`).

use std::fmt;
use std::path::PathBuf;

use config::ConfigError;

#[derive(Debug)]
pub enum Error {
    /// The configuration cannot be read or is not valid.
    Config(ConfigError),
    /// No `[[jobs]]` entry has this name.
    NoJob { job: String, config: PathBuf },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::NoJob { job, config } => {
                write!(
                    f,
                    "{}: no [[jobs]] entry is named {job:?}",
                    config.display()
                )
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::NoJob { .. } => None,
        }
    }
}
