//! The owner's request to verify the whole audit chain while brokerd serves (`audit_verify`
//! on the admin socket; the NixOS module's daily timer sends it with `bxctl audit verify
//! --brokerd`), and the checkpoint it refreshes (docs/decisions.md A8).
//!
//! The writer goes on meanwhile: the verification reads from the first line to the link
//! the writer had reached when it began, on a connection thread, holding no lock but for
//! an instant at its start. The checkpoint must agree with the bytes on the way. A failure
//! is logged at error level (the journal) and, with the gateway on, posted on Mattermost
//! through the outbox; brokerd serves on (the next start refuses a break past the
//! checkpoint, as it always did). A success writes a checkpoint there, once the records of
//! the denials its lines hold are in the accounting file (X8), so that a start after it
//! reads only what came later.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use daemon::{lock, log};
use proto::Timestamp;
use proto::checkpoint::AuditVerified;
use proto::gateway::AuditAlert;

use super::Broker;
use crate::Fatal;
use crate::ask::outbox::Outgoing;
use crate::audit::{self, AuditError};
use crate::context::Rebuilt;

/// One verification at a time: a second request waits for the first to end.
static ONE: Mutex<()> = Mutex::new(());

impl Broker {
    /// Verifies the whole chain, up to the writer's last line now; `stop` is set when brokerd
    /// stops. `Err` only when the accounting could not be written (brokerd then stops, B10).
    pub fn verify_audit(&self, stop: &AtomicBool) -> Result<AuditVerified, Fatal> {
        let _one = lock(&ONE);
        let (dir, at) = {
            let audit = lock(&self.audit);
            (audit.dir().to_owned(), audit.position())
        };
        let Some(at) = at else {
            // Never: a serving brokerd has audited its first snapshot.
            return Ok(self.broken("the audit log has no line to verify".into()));
        };
        // Taken after the position: a report recorded later has no use up to it.
        let kept = self.context.kept();
        let mut rebuilt = Rebuilt::default();
        let whole = match audit::verify_whole(&dir, &at, stop, &mut |line| {
            rebuilt.visit_kept(&kept, line);
        }) {
            Ok(whole) => whole,
            Err(AuditError::Stopped) => return Ok(AuditVerified::Stopped),
            Err(e) => return Ok(self.broken(e.to_string())),
        };
        // The denials' records in the file, synced, before the checkpoint covers their lines.
        let again = self
            .context
            .rebuild(&rebuilt.denials)
            .map_err(Fatal::Accounting)?;
        let used = rebuilt.kept_uses(|c| kept.keeps(c));
        let checkpoint = match audit::write_checkpoint(&dir, &at, used) {
            Ok(cp) => Some(cp.seq),
            Err(e) => {
                log::warn(format_args!(
                    "audit log: verified, but no new checkpoint ({e}); starts verify from the last one"
                ));
                None
            }
        };
        log::info(format_args!(
            "audit log: the whole chain verified, {} records up to seq {} ({} line {}){}; {} \
         denials' records written again",
            whole.lines,
            at.seq,
            at.at.file,
            at.at.line,
            if checkpoint.is_some() {
                ", the checkpoint now there"
            } else {
                ""
            },
            again
        ));
        Ok(AuditVerified::Good {
            records: whole.lines,
            recovered: whole.recovered,
            next_seq: whole.head.next_seq,
            head: whole.head.prev,
            checkpoint,
        })
    }

    /// Says it: in the journal, and on Mattermost when the gateway is on.
    fn broken(&self, detail: String) -> AuditVerified {
        log::error(format_args!(
            "audit log: the verification of the whole chain FAILED: {detail}"
        ));
        self.outbox.tell(Outgoing::Alert(AuditAlert {
            time: Timestamp::now(),
            detail: detail.clone(),
        }));
        AuditVerified::Broken { detail }
    }
}
