//! What a start rebuilds from the audit log, in the one pass that verifies it
//! (docs/decisions.md W9, X8, A8): the log is verified from its checkpoint (checked against
//! the bytes first; from the first line when there is none), the uses of the kept reports'
//! calls are marked in the witness store (the checkpoint's, then those of the lines past
//! it), the denials of those calls in the lines past it are accounted again, and a new
//! checkpoint is written at the log's end, once all of that is durable elsewhere. A log
//! that starts anew (no line) while the store keeps reports forgets them (W9).

use daemon::log;
use proto::checkpoint::Checkpoint;

use crate::Error;
use crate::audit::{self, AuditError, AuditLog, Clock, Locked, OpenReport};
use crate::context::Rebuilt;
use crate::context::accounting::Accounting;
use crate::context::witness::Store;

/// The state a start opened, and what it rebuilt.
#[derive(Debug)]
pub struct Restored {
    pub audit: AuditLog,
    pub report: OpenReport,
    pub store: Store,
    pub accounting: Accounting,
    /// The reports the store held at open.
    pub kept: usize,
    /// The uses of kept reports' calls marked (from the checkpoint and the lines past it).
    pub uses: usize,
    /// The denials of kept reports' calls in the lines past the checkpoint, and how many of
    /// their records were written again.
    pub denials: usize,
    pub again: usize,
    /// The reports forgotten because the audit log is new.
    pub forgotten: usize,
    /// The checkpoint written at the end (none: the log has no line), or why none was.
    pub checkpoint: Result<Option<Checkpoint>, AuditError>,
}

/// Opens the audit log `locked` with `clock` past its checkpoint, rebuilding into `store`
/// (holding `kept` reports) and into the accounting `accounting` opens, then writes the
/// new checkpoint. A checkpoint that cannot be written is reported, not fatal: the one
/// before it still holds, and the next start reads a little more.
pub fn restore(
    locked: Locked,
    clock: Clock,
    mut store: Store,
    kept: usize,
    accounting: impl FnOnce() -> Result<Accounting, Error>,
) -> Result<Restored, Error> {
    let mut rebuilt = Rebuilt::default();
    let (audit, report) = locked
        .open(clock, &mut |line| rebuilt.visit(&mut store, line))
        .map_err(Error::AuditOpen)?;
    if let Some(cp) = &report.from {
        for w in &cp.used {
            rebuilt.checkpointed(&mut store, w);
        }
    }
    let mut forgotten = 0;
    if report.lines == 0 && kept > 0 {
        // A new audit log holds none of the uses of the reports kept (W9).
        store.forget_all().map_err(Error::Witness)?;
        forgotten = kept;
    }
    let mut accounting = accounting()?;
    let again = accounting
        .rebuild(&rebuilt.denials)
        .map_err(Error::Accounting)?;
    // What the lines up to the log's end leave for brokerd is durable elsewhere now: their
    // uses go into the checkpoint, their denials' records are in the accounting file.
    let checkpoint = match audit.position() {
        Some(at) => {
            let used = rebuilt.kept_uses(|c| store.get(c).is_some());
            audit::write_checkpoint(audit.dir(), &at, used).map(Some)
        }
        None => Ok(None),
    };
    Ok(Restored {
        audit,
        report,
        store,
        accounting,
        kept,
        uses: rebuilt.uses,
        denials: rebuilt.denials.len(),
        again,
        forgotten,
        checkpoint,
    })
}

impl Restored {
    /// Says in the log what the start found and rebuilt.
    pub fn log(&self, torn: bool) {
        log::info(format_args!("audit log: {}", self.report));
        log::info(format_args!(
            "witness store: {} records kept, {} of their calls used (from the audit log){}",
            self.kept,
            self.uses,
            if torn {
                "; a torn last line cut off"
            } else {
                ""
            }
        ));
        if self.forgotten > 0 {
            log::warn(format_args!(
                "witness store: the audit log is new, so the uses of the {} records kept are \
                 unknown; they are forgotten (their calls are not_witnessed)",
                self.forgotten
            ));
        }
        log::info(format_args!(
            "accounting: {} denials of kept witnessed calls in the audit log past its \
             checkpoint, {} of their records written again",
            self.denials, self.again
        ));
        match &self.checkpoint {
            Ok(Some(cp)) => log::info(format_args!(
                "audit log: checkpoint written at seq {} ({} line {}), {} uses kept",
                cp.seq,
                cp.file,
                cp.line,
                cp.used.len()
            )),
            Ok(None) => {}
            Err(e) => log::warn(format_args!(
                "audit log: no new checkpoint ({e}); the next start verifies from the last one"
            )),
        }
    }
}
