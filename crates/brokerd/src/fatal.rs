//! Why the broker must stop serving: its durable state (the audit log, the session state)
//! can no longer be trusted, or the OS cannot give it what a decision needs.

use std::fmt;

use crate::audit::AuditError;
use crate::context::accounting::LogError;
use crate::sessions::StateError;

#[derive(Debug)]
pub enum Fatal {
    /// The audit log took no record (its own text names the file and what failed).
    Audit(AuditError),
    /// A session's state file could not be written.
    Sessions(StateError),
    /// The OS random source failed while making an approval id.
    Rng(getrandom::Error),
    /// The accounting took no record.
    Accounting(LogError),
    /// The witness store took no record (a report, or a call's use).
    Witness(crate::context::witness::StoreError),
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Audit(e) => e.fmt(f),
            Self::Sessions(e) => write!(f, "session state: {e}"),
            Self::Rng(e) => write!(f, "OS RNG: {e}"),
            Self::Accounting(e) => write!(f, "accounting: {e}"),
            Self::Witness(e) => write!(f, "witness store: {e}"),
        }
    }
}

impl std::error::Error for Fatal {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Audit(e) => Some(e),
            Self::Sessions(e) => Some(e),
            Self::Accounting(e) => Some(e),
            Self::Witness(e) => Some(e),
            // getrandom implements std's Error only with its "std" feature, which the
            // workspace leaves off: its code is in the text.
            Self::Rng(_) => None,
        }
    }
}

impl From<AuditError> for Fatal {
    fn from(e: AuditError) -> Self {
        Self::Audit(e)
    }
}
