//! Why a run could not even begin. A run that begins and fails is not an error here: it is
//! delivered as a failure and the runner exits 1 (`Finished::Failed`). `main` prints the
//! error once and exits with its status ([`daemon::exit::Status`]); each text prints what it
//! wraps (docs/decisions.md F16).

use std::path::PathBuf;

use config::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot be read or is not valid.
    #[error("{0}")]
    Config(ConfigError),
    /// No `[[jobs]]` entry has this name.
    #[error("{}: no [[jobs]] entry is named {job:?}", config.display())]
    NoJob { job: String, config: PathBuf },
}

impl daemon::exit::Status for Error {
    /// Every variant is listed, so a new one is given its status on purpose: 2, nothing ran
    /// (the table is in `main.rs`).
    fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::NoJob { .. } => 2,
        }
    }
}
