//! Why the broker must stop serving: its durable state (the audit log, the session state)
//! can no longer be trusted, or the OS cannot give it what a decision needs.

use crate::audit::AuditError;
use crate::context::accounting::LogError;
use crate::context::witness::StoreError;
use crate::sessions::StateError;

#[derive(Debug, thiserror::Error)]
pub enum Fatal {
    /// The audit log took no record (its own text names the file and what failed).
    #[error("{0}")]
    Audit(AuditError),
    /// A session's state file could not be written.
    #[error("session state: {0}")]
    Sessions(StateError),
    /// The OS random source failed while making an approval id.
    #[error("OS RNG: {0}")]
    Rng(getrandom::Error),
    /// The accounting took no record.
    #[error("accounting: {0}")]
    Accounting(LogError),
    /// The witness store took no record (a report, or a call's use).
    #[error("witness store: {0}")]
    Witness(StoreError),
}

impl From<AuditError> for Fatal {
    fn from(e: AuditError) -> Self {
        Self::Audit(e)
    }
}
