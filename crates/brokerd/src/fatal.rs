//! Why the broker must stop serving: its durable state (the audit log, the session state)
//! can no longer be trusted, or the OS cannot give it what a decision needs.

use crate::audit::AuditError;

#[derive(Debug)]
pub struct Fatal(pub String);

impl From<AuditError> for Fatal {
    fn from(e: AuditError) -> Self {
        Self(format!("audit log: {e}"))
    }
}
