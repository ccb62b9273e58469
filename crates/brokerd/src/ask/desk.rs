//! The approval desk: puts an `ask` to the owner and waits for the answer, and takes the
//! owner's answers; it holds the session allowances those answers made (`allowances`).
//! Every request, every refused answer and every allowance granted or revoked is audited;
//! what waits is shown to gatewayd through the outbox. Which decision an answer makes, and
//! which calls an allowance covers, are the broker's.

use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use daemon::{hangup, lock};
use proto::allowance::{Allowance, RevokeOutcome};
use proto::approval::{AnswerOutcome, ApprovalAnswer, ApprovalCard, Refusal, Verdict};
use proto::gateway::{ApprovalUpdate, Update};
use proto::{AuditEvent, AuditLine, Hash32, Timestamp};

use crate::ask::allowances::{Allowances, Fit, Held};
use crate::ask::approvals::{Answer, Approvals, Approved, NotRegistered, Wake};
use crate::ask::outbox::{Outbox, Outgoing};
use crate::audit::{AuditError, AuditLog};

/// Who denied a call that loopd withdrew, as gatewayd shows it.
pub const WITHDRAWN_BY: &str = "loopd (the turn was cancelled)";

/// Who denied a call whose card no longer held when the owner answered, as gatewayd shows
/// it: brokerd, never the owner.
pub const CHANGED_BY: &str = "brokerd (the labels rose after the card was shown)";

#[derive(Debug)]
pub struct Desk {
    approvals: Mutex<Approvals>,
    allowances: Mutex<Allowances>,
}

/// What became of a card put to the owner.
#[derive(Debug)]
pub enum Heard {
    /// It was not put: too many wait, or brokerd is stopping.
    NotAsked(NotRegistered),
    Woke(Wake),
    /// The owner did not answer before the card expired.
    Expired,
}

impl Desk {
    /// A desk that holds at most `cap` approvals at a time.
    pub fn new(cap: usize) -> Self {
        Self {
            approvals: Mutex::new(Approvals::new(cap)),
            allowances: Mutex::new(Allowances::default()),
        }
    }

    /// The owner's approval for a call an allowance in force covers, judged by `fit`, if
    /// one does (`Allowances::cover`): the call then runs without asking.
    pub fn covered(&self, now: Timestamp, fit: impl Fn(&Held) -> Fit) -> Option<Approved> {
        lock(&self.allowances).cover(now, fit)
    }

    /// Puts an allowance the owner's `allow_session` answer made in force, audited first
    /// (`allowance_granted`, a grant change with its scope).
    pub fn allow(&self, held: Held, audit: &Mutex<AuditLog>) -> Result<(), AuditError> {
        let a = &held.allowance;
        lock(audit).append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::AllowanceGranted {
                seq,
                time,
                prev,
                allowance: a.allowance.clone(),
                approval: a.approval.clone(),
                session: a.session.clone(),
                tool: a.tool.clone(),
                grant: a.grant.clone(),
                grant_text: held.grant_text,
                scope: a.scope.clone(),
                session_taint: a.session_taint,
                untrusted: a.untrusted,
                by: a.by.clone(),
                post: a.post.clone(),
                expires: a.expires,
            })
        })?;
        lock(&self.allowances).insert(held);
        Ok(())
    }

    /// The owner ends an allowance now (audited `allowance_revoked` once it is out of
    /// force); one not in force is said so.
    pub fn revoke(
        &self,
        allowance: &str,
        by: String,
        audit: &Mutex<AuditLog>,
    ) -> Result<RevokeOutcome, AuditError> {
        let Some(ended) = lock(&self.allowances).revoke(allowance, Timestamp::now()) else {
            return Ok(RevokeOutcome::NotInForce);
        };
        lock(audit).append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::AllowanceRevoked {
                seq,
                time,
                prev,
                allowance: ended.allowance.clone(),
                by,
            })
        })?;
        Ok(RevokeOutcome::Revoked {
            allowance: Box::new(ended),
        })
    }

    /// Every allowance in force, after ending those `ended` says can never cover a call
    /// again.
    pub fn allowances(&self, ended: impl Fn(&Held) -> bool) -> Vec<Allowance> {
        lock(&self.allowances).list(Timestamp::now(), ended)
    }

    /// Every approval waiting for the owner.
    pub fn list(&self) -> Vec<ApprovalCard> {
        lock(&self.approvals).list()
    }

    pub fn is_pending(&self, approval: &str) -> bool {
        lock(&self.approvals).is_pending(approval)
    }

    /// brokerd is stopping: every call waiting for the owner is woken to be denied, and
    /// nothing is asked from now on. Returns how many were waiting.
    pub fn stop(&self) -> usize {
        lock(&self.approvals).stop()
    }

    /// Puts `card` (its expiry counted from `asked`) to the owner and waits for the answer,
    /// the expiry, or the requester's hang-up on `requester` (its connection: loopd
    /// withdraws a call this way when the owner cancels the turn). `pending` is called once
    /// the card waits, to tell the caller so.
    pub fn put(
        &self,
        card: ApprovalCard,
        asked: Timestamp,
        audit: &Mutex<AuditLog>,
        outbox: &Outbox,
        requester: Option<UnixStream>,
        pending: impl FnOnce(),
    ) -> Result<Heard, AuditError> {
        let approval = card.approval.clone();
        let (tx, rx) = mpsc::channel();
        let hung_up = tx.clone();
        if let Some(why) = lock(&self.approvals).refuses() {
            return Ok(Heard::NotAsked(why));
        }
        lock(audit).append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::ApprovalRequested {
                seq,
                time,
                prev,
                approval: approval.clone(),
                binding: card.binding,
                session: card.session.clone(),
                call: card.call,
                tool: card.tool.clone(),
                grant: card.grant.clone(),
                expires: card.expires,
            })
        })?;
        let expires = card.expires;
        // Only once the request is on disk can an answer to it be taken. Connections are
        // served one request at a time per session, so the count cannot have filled up
        // for this session since the check above; another session may have (or brokerd
        // began to stop), and then this request is refused rather than left waiting.
        if let Err(why) = lock(&self.approvals).register(card.clone(), tx) {
            return Ok(Heard::NotAsked(why));
        }
        outbox.tell(Outgoing::Post(Box::new(card)));
        pending();
        let watching = Arc::new(AtomicBool::new(false));
        if let Some(stream) = requester {
            let watching = watching.clone();
            // Without the watch the call still ends (answer, expiry, stop): not fatal.
            let _ = std::thread::Builder::new()
                .name("hangup".into())
                .spawn(move || {
                    if hangup::wait(&stream, &watching) {
                        let _ = hung_up.send(Wake::Withdrawn);
                    }
                });
        }
        let wait = Duration::from_millis(expires.as_millis().saturating_sub(asked.as_millis()));
        let woke = rx.recv_timeout(wait);
        watching.store(true, Ordering::Release);
        let wake = match woke {
            Ok(Wake::Withdrawn) => {
                if lock(&self.approvals).withdraw(&approval, Refusal::AlreadyUsed) {
                    Some(Wake::Withdrawn)
                } else {
                    // Answered (or stopped) in the instant before the withdrawal.
                    rx.try_recv().ok()
                }
            }
            Ok(w) => Some(w),
            Err(_) => {
                if lock(&self.approvals).withdraw(&approval, Refusal::Expired) {
                    None
                } else {
                    rx.try_recv().ok()
                }
            }
        };
        outbox.tell(Outgoing::Update(ApprovalUpdate {
            approval,
            update: match &wake {
                Some(Wake::Approved(a)) => Update::Decided {
                    verdict: Verdict::Approve,
                    by: a.by().to_owned(),
                },
                Some(Wake::ForSession(a)) => Update::Decided {
                    verdict: Verdict::AllowSession,
                    by: a.by().to_owned(),
                },
                Some(Wake::Refused { by, .. }) => Update::Decided {
                    verdict: Verdict::Deny,
                    by: by.clone(),
                },
                Some(Wake::Changed) => Update::Decided {
                    verdict: Verdict::Deny,
                    by: CHANGED_BY.to_owned(),
                },
                Some(Wake::Stopping) => Update::Stopped,
                Some(Wake::Withdrawn) => Update::Decided {
                    verdict: Verdict::Deny,
                    by: WITHDRAWN_BY.to_owned(),
                },
                None => Update::Expired,
            },
        }));
        Ok(wake.map_or(Heard::Expired, Heard::Woke))
    }

    /// Applies an owner's answer; a refused one is audited here (an accepted one is audited
    /// by the waiting request as its decision). `current` is the shown card's binding
    /// recomputed from the labels as they stand now (see [`Approvals::answer`]).
    pub fn answer(
        &self,
        answer: &ApprovalAnswer,
        by: String,
        post: Option<String>,
        current: impl FnOnce(&ApprovalCard) -> Hash32,
        audit: &Mutex<AuditLog>,
    ) -> Result<AnswerOutcome, AuditError> {
        if answer.verdict == Verdict::AllowSession
            && lock(&self.allowances).is_full(Timestamp::now())
        {
            let refusal = Refusal::AllowancesFull;
            return refuse_answer(&answer.approval, by, post, refusal, audit);
        }
        let result = lock(&self.approvals).answer(
            &answer.approval,
            answer.binding,
            current,
            Answer {
                verdict: answer.verdict,
                by: by.clone(),
                post: post.clone(),
            },
            Timestamp::now(),
        );
        match result {
            Ok(()) => Ok(AnswerOutcome::Accepted),
            Err(refused) => refuse_answer(&answer.approval, by, post, refused.refusal, audit),
        }
    }
}

/// Audits a refused answer and says so.
pub fn refuse_answer(
    approval: &str,
    by: String,
    post: Option<String>,
    refusal: Refusal,
    audit: &Mutex<AuditLog>,
) -> Result<AnswerOutcome, AuditError> {
    lock(audit).append(|seq, time, prev| {
        AuditLine::Event(AuditEvent::ApprovalRefused {
            seq,
            time,
            prev,
            approval: approval.to_owned(),
            by,
            post,
            refusal,
        })
    })?;
    Ok(AnswerOutcome::Refused { refusal })
}
