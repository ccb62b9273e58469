//! Why a stage failed (shared by the write stages and the run executor, answered by
//! `stage`).

use proto::tools::stage::StageFailure;

/// Why a stage failed: its kind for brokerd, and words for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StageError {
    pub failure: StageFailure,
    pub message: String,
}

impl StageError {
    pub fn new(failure: StageFailure, message: impl Into<String>) -> Self {
        Self {
            failure,
            message: message.into(),
        }
    }
}

impl StageError {
    /// Names the step a system call failed in, for a failure no other kind describes.
    #[must_use]
    pub fn during(mut self, step: &str) -> Self {
        if self.failure == StageFailure::Io {
            self.message = format!("{} ({step})", self.message);
        }
        self
    }
}
