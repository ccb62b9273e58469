//! A failed `bxctl verify --alert`'s lines for the owner's channel (`verify_alert` on the
//! admin side; docs/verify.md, docs/decisions.md V18). brokerd checks the bounds, audits the
//! lines with who handed them over and what became of them, and with the gateway on queues
//! them for gatewayd (`verify_post`), which posts them inert with nothing to answer.
//!
//! At most one alert waits to be posted and at most one is taken per [`INTERVAL`] (10
//! minutes), by the monotonic clock (`ask::verify_slot`): the daily timer makes one a day,
//! and an admin peer running it in a loop, or a long gatewayd outage, does not fill the
//! owner's channel. One held back is audited too, and the answer says why: when the next
//! may go, or which one still waits.

use std::time::Instant;

use daemon::{lock, log};
use proto::alert::{AlertError, AlertOutcome, VerifyAlert, VerifyAlerted, VerifyPost};
use proto::{AuditEvent, AuditLine, Timestamp};

use super::Broker;
use crate::Fatal;
use crate::ask::verify_slot::Admit;

impl Broker {
    /// Takes `alert` from the admin peer `by`. `Ok(Err)` is a refusal (out of bounds,
    /// nothing audited); `Err` when the audit line could not be written.
    pub(crate) fn verify_alert(
        &self,
        alert: VerifyAlert,
        by: &str,
    ) -> Result<Result<VerifyAlerted, AlertError>, Fatal> {
        if let Err(e) = proto::alert::check(&alert.lines) {
            return Ok(Err(e));
        }
        let (now, clock) = (Timestamp::now(), Instant::now());
        let lines = alert.lines.len();
        // Held under the lock until the line is written, so two at once cannot both go.
        let mut slot = self.verify_slot.lock();
        let (outcome, next, waiting) = if self.config.gateway.is_none() {
            (AlertOutcome::NoGateway, None, None)
        } else {
            match slot.admit(clock) {
                Admit::Waiting { seq } => (AlertOutcome::Held, None, Some(seq)),
                // The wall clock only to say when, to the peer.
                Admit::Recent { left } => {
                    (AlertOutcome::Held, Some(now.saturating_add(left)), None)
                }
                Admit::Free if self.board.is_linked() => (AlertOutcome::Forwarded, None, None),
                Admit::Free => (AlertOutcome::Queued, None, None),
            }
        };
        let appended = lock(&self.audit).append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::VerifyAlerted {
                seq,
                time,
                prev,
                by: by.to_owned(),
                lines: alert.lines.clone(),
                outcome,
            })
        })?;
        if matches!(outcome, AlertOutcome::Forwarded | AlertOutcome::Queued) {
            // The link thread takes it from the slot (`sockets::gateway`).
            let post = VerifyPost {
                time: now,
                by: by.to_owned(),
                lines: alert.lines,
            };
            slot.put(post, appended.seq, clock);
        }
        drop(slot);
        // The lines are in the audit line; the journal says where.
        log::warn(format_args!(
            "a failed verification's {} line(s) from {by}: {} (audit seq {})",
            lines,
            match outcome {
                AlertOutcome::Forwarded => "forwarded to gatewayd",
                AlertOutcome::Queued => "queued until gatewayd is linked",
                AlertOutcome::Held if waiting.is_some() => "held back (one still waits)",
                AlertOutcome::Held => "held back (one taken less than the interval ago)",
                AlertOutcome::NoGateway => "not posted (no gateway)",
            },
            appended.seq
        ));
        Ok(Ok(VerifyAlerted {
            seq: appended.seq,
            outcome,
            next,
            waiting,
        }))
    }
}
