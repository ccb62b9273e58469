//! The owner's side: approvals, answers and read-only queries. Reached only through the
//! admin socket (and, with the gateway, gateway.sock); the socket decides, never the peer.

use daemon::lock;
use proto::approval::{
    AnswerOutcome, ApprovalAnswer, ApprovalListing, GrantsInfo, Refusal, SessionInfo, SessionQuery,
};
use proto::{AuditEvent, AuditLine, Message, Timestamp};

use crate::approvals::Answer;
use crate::broker::{Broker, Fatal};

/// What the admin side takes; every other kind is refused there like on any socket.
#[derive(Debug)]
pub enum AdminRequest {
    ApprovalList,
    ApprovalAnswer(ApprovalAnswer),
    SessionQuery(SessionQuery),
    GrantsQuery,
}

impl TryFrom<Message> for AdminRequest {
    /// The message, when it is not an admin kind.
    type Error = Message;

    fn try_from(msg: Message) -> Result<Self, Message> {
        Ok(match msg {
            Message::ApprovalList(_) => Self::ApprovalList,
            Message::ApprovalAnswer(answer) => Self::ApprovalAnswer(answer),
            Message::SessionQuery(q) => Self::SessionQuery(q),
            Message::GrantsQuery(_) => Self::GrantsQuery,
            other => return Err(other),
        })
    }
}

impl Broker {
    /// Answers one admin request; `who` is the peer as the kernel names it.
    pub fn admin(&self, req: AdminRequest, who: &str) -> Result<Message, Fatal> {
        Ok(match req {
            AdminRequest::ApprovalList => {
                let cards = lock(&self.approvals).list();
                Message::ApprovalListing(fit(cards))
            }
            AdminRequest::ApprovalAnswer(answer) => {
                // On the admin socket the approver is the peer's uid and user name; what the
                // message claims (`by`, `post`) is not taken.
                Message::ApprovalAnswered(self.answer(&answer, who.to_owned(), None)?)
            }
            AdminRequest::SessionQuery(q) => {
                let state = self.session_state(&q.session);
                Message::SessionInfo(SessionInfo {
                    session: state.session,
                    taint: state.taint,
                    untrusted: state.untrusted,
                    untrusted_by: state.untrusted_by,
                })
            }
            AdminRequest::GrantsQuery => {
                let snapshot = self.snapshot();
                Message::GrantsInfo(GrantsInfo {
                    snapshot: snapshot.hash(),
                    grants: snapshot.ids(),
                })
            }
        })
    }

    /// Applies an owner's answer; a refused one is audited here (an accepted one is audited
    /// by the waiting request as its decision).
    pub fn answer(
        &self,
        answer: &ApprovalAnswer,
        by: String,
        post: Option<String>,
    ) -> Result<AnswerOutcome, Fatal> {
        let result = lock(&self.approvals).answer(
            &answer.approval,
            answer.binding,
            |card| {
                // The card as it would be shown now: a session that moved on no longer
                // matches what the owner saw.
                let now = self.session_state(&card.session);
                let mut card = card.clone();
                card.session_taint = now.taint;
                card.untrusted = now.untrusted;
                card.untrusted_by = now.untrusted_by;
                card.bound()
            },
            Answer {
                verdict: answer.verdict,
                by: by.clone(),
                post: post.clone(),
            },
            Timestamp::now(),
        );
        match result {
            Ok(()) => Ok(AnswerOutcome::Accepted),
            Err(refused) => self.refuse_answer(&answer.approval, by, post, refused.refusal),
        }
    }

    /// Audits a refused answer and says so.
    pub(crate) fn refuse_answer(
        &self,
        approval: &str,
        by: String,
        post: Option<String>,
        refusal: Refusal,
    ) -> Result<AnswerOutcome, Fatal> {
        self.append(|seq, time, prev| {
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
}

/// The listing must fit in one frame: cards are taken soonest-expiring first while they fit
/// in a budget well under `MAX_FRAME`; the rest are counted as omitted.
fn fit(cards: Vec<proto::approval::ApprovalCard>) -> ApprovalListing {
    const BUDGET: usize = proto::MAX_FRAME * 3 / 4;
    let mut used = 0;
    let mut listing = ApprovalListing {
        pending: Vec::new(),
        omitted: 0,
    };
    for card in cards {
        let size = serde_json::to_vec(&card).map_or(usize::MAX, |v| v.len());
        if used + size <= BUDGET {
            used += size;
            listing.pending.push(card);
        } else {
            listing.omitted += 1;
        }
    }
    listing
}
