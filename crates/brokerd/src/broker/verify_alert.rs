//! A failed `bxctl verify --alert`'s lines for the owner's channel (`verify_alert` on the
//! admin side; docs/verify.md, docs/decisions.md V18). brokerd checks the bounds, audits the
//! lines with who handed them over and what became of them, and with the gateway on queues
//! them for gatewayd (`verify_post`), which posts them inert with nothing to answer.
//!
//! At most one alert is forwarded per [`INTERVAL`] (10 minutes): the daily timer makes one
//! a day, and an admin peer running it in a loop does not fill the owner's channel. One held
//! back is audited too, and the answer says when the next may go.

use std::sync::Mutex;

use daemon::{lock, log};
use proto::alert::{AlertError, AlertOutcome, INTERVAL, VerifyAlert, VerifyAlerted, VerifyPost};
use proto::{AuditEvent, AuditLine, Timestamp};

use super::Broker;
use crate::Fatal;
use crate::ask::outbox::Outgoing;

/// When the last alert was forwarded.
static LAST: Mutex<Option<Timestamp>> = Mutex::new(None);

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
        let now = Timestamp::now();
        let lines = alert.lines.len();
        // Held under the lock until the line is written, so two at once cannot both go.
        let mut last = lock(&LAST);
        let (outcome, next) = if self.config.gateway.is_none() {
            (AlertOutcome::NoGateway, None)
        } else {
            match *last {
                Some(at) if now < at.saturating_add(INTERVAL) => {
                    (AlertOutcome::Held, Some(at.saturating_add(INTERVAL)))
                }
                _ if self.board.is_linked() => (AlertOutcome::Forwarded, None),
                _ => (AlertOutcome::Queued, None),
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
            *last = Some(now);
            self.outbox.tell(Outgoing::Verify(VerifyPost {
                time: now,
                by: by.to_owned(),
                lines: alert.lines,
            }));
        }
        // The lines are in the audit line; the journal says where.
        log::warn(format_args!(
            "a failed verification's {} line(s) from {by}: {} (audit seq {})",
            lines,
            match outcome {
                AlertOutcome::Forwarded => "forwarded to gatewayd",
                AlertOutcome::Queued => "queued until gatewayd is linked",
                AlertOutcome::Held => "held back (one forwarded less than the interval ago)",
                AlertOutcome::NoGateway => "not posted (no gateway)",
            },
            appended.seq
        ));
        Ok(Ok(VerifyAlerted {
            seq: appended.seq,
            outcome,
            next,
        }))
    }
}
