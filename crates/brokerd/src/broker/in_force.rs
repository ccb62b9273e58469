//! The grant snapshot in force, and the `grants_loaded` line that recorded it. A snapshot
//! is in force only once its line is on disk, and a reload that did not load is audited
//! with the snapshot it kept.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use daemon::lock;
use proto::{AuditEvent, AuditLine};

use crate::Fatal;
use crate::audit::AuditLog;
use grants::Snapshot;

#[derive(Debug)]
pub struct GrantsInForce {
    installed: RwLock<Installed>,
}

/// The snapshot in force, and the seq of the `grants_loaded` line that recorded it (none
/// until the first is written at start).
#[derive(Debug)]
struct Installed {
    snapshot: Arc<Snapshot>,
    line: Option<u64>,
}

impl GrantsInForce {
    /// `snapshot` in force, not yet audited (see [`GrantsInForce::audit_first`]).
    pub fn new(snapshot: Snapshot) -> Self {
        Self {
            installed: RwLock::new(Installed {
                snapshot: Arc::new(snapshot),
                line: None,
            }),
        }
    }

    pub fn current(&self) -> Arc<Snapshot> {
        self.installed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .snapshot
            .clone()
    }

    /// Makes `snapshot` the policy for later calls, after auditing it. The swap happens
    /// under the same write lock as the audit line: no call decides on the old snapshot
    /// once the line is on disk, and none on the new one before.
    pub fn install(&self, snapshot: Snapshot, audit: &Mutex<AuditLog>) -> Result<(), Fatal> {
        let mut current = self
            .installed
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let line = match current.line {
            Some(since) => audited(
                audit,
                &snapshot,
                snapshot.changed_since(&current.snapshot),
                Some(since),
            )?,
            None => audited(audit, &snapshot, snapshot.texts().clone(), None)?,
        };
        *current = Installed {
            snapshot: Arc::new(snapshot),
            line: Some(line),
        };
        Ok(())
    }

    /// Audits the snapshot brokerd started with, with the text of every grant: a start
    /// does not read the policy back from the audit, so each run's first line is whole.
    pub fn audit_first(&self, audit: &Mutex<AuditLog>) -> Result<(), Fatal> {
        let mut current = self
            .installed
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let texts = current.snapshot.texts().clone();
        current.line = Some(audited(audit, &current.snapshot, texts, None)?);
        Ok(())
    }

    /// Audits a reload that did not load (`reason`): the snapshot in force stays.
    pub fn refuse(&self, reason: &str, audit: &Mutex<AuditLog>) -> Result<(), Fatal> {
        let kept = self.current().hash();
        lock(audit).append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::GrantsRefused {
                seq,
                time,
                prev,
                kept,
                reason: reason.to_owned(),
            })
        })?;
        Ok(())
    }
}

/// Writes the `grants_loaded` line of `snapshot`; returns its seq.
fn audited(
    audit: &Mutex<AuditLog>,
    snapshot: &Snapshot,
    texts: BTreeMap<String, String>,
    since: Option<u64>,
) -> Result<u64, Fatal> {
    let appended = lock(audit).append(|seq, time, prev| {
        AuditLine::Event(AuditEvent::GrantsLoaded {
            seq,
            time,
            prev,
            snapshot: snapshot.hash(),
            grants: snapshot.ids(),
            texts,
            since,
        })
    })?;
    Ok(appended.seq)
}
