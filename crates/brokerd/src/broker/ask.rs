//! An `ask` put to the owner, and the owner's answers; an allowance the owner gave for the
//! session, covering the call instead (`policy::allowance`'s rules, the desk's `Approved`).

use std::os::unix::net::UnixStream;
use std::time::Duration;

use proto::allowance::{Allowance, RevokeOutcome, Scope};
use proto::approval::{AnswerOutcome, ApprovalAnswer, ApprovalCard, Refusal, WriteCard};
use proto::{DenyReason, Hash32, SessionId, Timestamp, ToolRequest};

use super::Broker;
use crate::Fatal;
use crate::ask::allowances::{Fit, Held};
use crate::ask::approvals::{self, NotRegistered, Wake};
use crate::ask::approved::Approved;
use crate::ask::desk::{self, Heard};
use crate::policy::allowance::{self as allow, within};
use crate::policy::{self, Decision, Outcome, SessionView};
use crate::sessions::SessionState;

/// A call an allowance may cover: its session, the grant that asks for it (by id and by
/// text), its scope and the label it is decided at.
struct Call<'a> {
    session: &'a SessionId,
    grant: &'a str,
    text: Hash32,
    scope: Scope,
    view: SessionView,
}

impl Call<'_> {
    /// What `held` is to this call (`policy::allowance`'s rules).
    fn fit(&self, held: &Held) -> Fit {
        let a = &held.allowance;
        if a.session != *self.session
            || a.grant != self.grant
            || held.grant_text != self.text
            || !allow::holds(&a.scope, &self.scope)
        {
            return Fit::Passes;
        }
        if within(self.view, ceiling(a)) {
            Fit::Covers
        } else {
            Fit::Ends
        }
    }
}

/// The label an allowance was given at.
fn ceiling(a: &Allowance) -> SessionView {
    SessionView {
        taint: a.session_taint,
        untrusted: a.untrusted,
    }
}

impl Broker {
    /// Puts an `ask` to the owner and waits for the answer, the expiry or the requester's
    /// hang-up. `state` is the session at the label the call is decided at, which the card
    /// shows and binds, with the canonical arguments and a write's card (its diff and the
    /// old content's hash, H8); `pending` tells the requester the approval's id and expiry
    /// once it waits.
    pub(super) fn ask(
        &self,
        req: &ToolRequest,
        decision: Decision,
        (canonical, write): (&str, Option<WriteCard>),
        state: &SessionState,
        requester: Option<UnixStream>,
        pending: &mut dyn FnMut(String, Timestamp),
    ) -> Result<Decision, Fatal> {
        let grant_id = match decision.outcome() {
            Outcome::Ask { grant_id } => grant_id.to_owned(),
            _ => return Ok(decision),
        };
        let now = Timestamp::now();
        // An allowance the owner gave for this session may cover the call: it then runs as
        // the owner approved, through the desk's `Approved` like any approval.
        let call = match (decision.grant(), allow::scope(&decision)) {
            (Some((grant, _)), Some(scope)) if !decision.always_ask() => Some(Call {
                session: &req.session,
                grant: &grant_id,
                text: allow::grant_text(grant),
                scope,
                view: state.view(),
            }),
            _ => None,
        };
        if let Some(call) = &call
            && let Some(approved) = self.desk.covered(now, |held| call.fit(held))
        {
            return Ok(policy::approve(decision, approved));
        }
        let lasts = self.config.broker.allowance_ttl;
        let expires = now.saturating_add(self.config.broker.approval_ttl);
        let approval = approvals::new_id().map_err(Fatal::Rng)?;
        let mut card = ApprovalCard {
            approval: approval.clone(),
            binding: Hash32::ZERO,
            session: req.session.clone(),
            call: req.call,
            tool: req.tool.clone(),
            arguments: canonical.to_owned(),
            grant: grant_id.clone(),
            session_taint: state.taint,
            untrusted: state.untrusted,
            untrusted_by: state.untrusted_by.clone(),
            expires,
            session_offer: allow::offer(&decision, state.view(), lasts),
            write,
        };
        card.binding = card.bound();
        let offered = card.clone();
        let heard = self
            .desk
            .put(card, now, &self.audit, &self.outbox, requester, || {
                pending(approval, expires);
            })?;
        Ok(match heard {
            Heard::NotAsked(why) => self.not_asked(decision, why),
            Heard::Woke(Wake::Approved(approved)) => policy::approve(decision, approved),
            Heard::Woke(Wake::ForSession(approved)) => {
                // Only a card with an offer takes this answer (`Approvals::answer`), and only
                // a call with a scope gets an offer.
                if let Some(call) = &call {
                    self.allow(&offered, call.text, &approved, lasts)?;
                }
                policy::approve(decision, approved)
            }
            Heard::Woke(Wake::Changed) => policy::refuse(
                decision,
                DenyReason::ApprovalChanged,
                "the owner answered a card whose labels no longer held: the session rose \
                 after it was shown",
            ),
            Heard::Woke(Wake::Stopping) => policy::refuse(
                decision,
                DenyReason::ShuttingDown,
                "brokerd stopped before the owner answered",
            ),
            Heard::Woke(Wake::Withdrawn) => policy::refuse(
                decision,
                DenyReason::ApprovalRefused,
                "loopd withdrew the request: its turn was cancelled (or loopd stopped)",
            ),
            Heard::Woke(Wake::Refused { by, post }) => policy::refuse(
                decision,
                DenyReason::ApprovalRefused,
                match post {
                    Some(post) => format!("{by} refused on Mattermost post {post}"),
                    None => format!("{by} refused"),
                },
            ),
            Heard::Expired => policy::refuse(
                decision,
                DenyReason::ApprovalExpired,
                "the owner did not answer in time",
            ),
        })
    }

    /// Puts in force what the owner allowed for the session by answering `card` (audited
    /// before the call it came with is decided).
    fn allow(
        &self,
        card: &ApprovalCard,
        grant_text: Hash32,
        approved: &Approved,
        lasts: Duration,
    ) -> Result<(), Fatal> {
        let Some(offer) = &card.session_offer else {
            return Ok(());
        };
        let granted = Timestamp::now();
        let allowance = Allowance {
            allowance: approvals::new_id().map_err(Fatal::Rng)?,
            session: card.session.clone(),
            tool: card.tool.clone(),
            grant: card.grant.clone(),
            scope: offer.scope.clone(),
            session_taint: card.session_taint,
            untrusted: card.untrusted,
            approval: card.approval.clone(),
            by: approved.by().to_owned(),
            post: approved.post().map(str::to_owned),
            granted,
            expires: granted.saturating_add(lasts),
        };
        let held = Held::new(allowance, grant_text, lasts);
        Ok(self.desk.allow(held, &self.audit)?)
    }

    /// The session allowances in force, after ending those whose session's label rose
    /// above the one each was given at (the label of the session's every later call is at
    /// least its own, so none of them can cover a call again).
    pub(crate) fn allowances(&self) -> Vec<Allowance> {
        self.desk.allowances(|held| {
            let now = self.session_state(&held.allowance.session).view();
            !within(now, ceiling(&held.allowance))
        })
    }

    /// The owner's `bxctl approvals revoke`, asked by `by`.
    pub(crate) fn revoke(&self, allowance: &str, by: String) -> Result<RevokeOutcome, Fatal> {
        Ok(self.desk.revoke(allowance, by, &self.audit)?)
    }

    /// An `ask` that cannot be put to the owner, decided at once.
    fn not_asked(&self, asked: Decision, why: NotRegistered) -> Decision {
        match why {
            NotRegistered::Full => {
                policy::too_many_pending(asked, self.config.broker.max_pending_approvals)
            }
            NotRegistered::Stopping => policy::refuse(
                asked,
                DenyReason::ShuttingDown,
                "brokerd is stopping and asks the owner nothing more",
            ),
        }
    }

    /// brokerd is stopping: every call waiting for the owner is denied now (each waiting
    /// request audits its decision and answers loopd, then the drain sees it finish), and
    /// no call asks from now on.
    pub fn stop_approvals(&self) -> usize {
        self.desk.stop()
    }

    /// Applies an owner's answer at the desk. It must carry the binding of the card that
    /// was shown (built at the label the call was decided at, which the session was raised
    /// to), and that card must still hold: recomputed from the session as it stands now,
    /// it is the same unless the session rose since, and then the call is denied as changed
    /// (by brokerd, never in the owner's name).
    pub fn answer(
        &self,
        answer: &ApprovalAnswer,
        by: String,
        post: Option<String>,
    ) -> Result<AnswerOutcome, Fatal> {
        let current = |card: &ApprovalCard| {
            let now = self.session_state(&card.session);
            let mut card = card.clone();
            card.session_taint = now.taint;
            card.untrusted = now.untrusted;
            card.untrusted_by = now.untrusted_by;
            card.bound()
        };
        Ok(self.desk.answer(answer, by, post, current, &self.audit)?)
    }

    /// Audits an answer refused before it reached the desk (not an owner's) and says so.
    pub(crate) fn refuse_answer(
        &self,
        approval: &str,
        by: String,
        post: Option<String>,
        refusal: Refusal,
    ) -> Result<AnswerOutcome, Fatal> {
        Ok(desk::refuse_answer(
            approval,
            by,
            post,
            refusal,
            &self.audit,
        )?)
    }
}
