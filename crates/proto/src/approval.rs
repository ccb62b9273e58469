//! The owner's side of approvals: listing what waits, and answering it. These kinds are
//! accepted only on owner channels (the admin side of broker.sock, gateway.sock), never on
//! the socket loopd uses.

use serde::{Deserialize, Serialize};

use crate::allowance::{Allowance, SessionOffer};
use crate::{CallId, DataClass, Hash32, SessionId, Timestamp};

mod write;
pub use write::{Shows, WriteCard};

/// Everything the owner sees before answering, and what the answer binds to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalCard {
    /// 128 bits from the OS RNG, as 32 lower-case hex characters.
    pub approval: String,
    /// [`ApprovalCard::bound`]: SHA-256 over everything else the card shows (all but the
    /// approval id). An answer must carry it; a changed request no longer matches.
    pub binding: Hash32,
    pub session: SessionId,
    pub call: CallId,
    pub tool: String,
    /// The canonical arguments: quoted data, never prose.
    pub arguments: String,
    pub grant: String,
    /// The taint the call is decided at: the session's, raised by the labels of the prompt
    /// that produced the call (so a fresh session's call from a secret prompt shows
    /// secret); likewise `untrusted`. The same label the decision's audit line records
    /// (`AuditRecord::session_taint` and `AuditRecord::untrusted`), and the label
    /// everything the call produces takes (docs/decisions.md X9).
    pub session_taint: DataClass,
    pub untrusted: bool,
    /// The calls whose results made the call's label untrusted: the session's own, and
    /// those of other sessions whose results its prompt replays (each then names its
    /// session).
    pub untrusted_by: Vec<CallRef>,
    pub expires: Timestamp,
    /// What "allow for this session" would allow (docs/broker.md): absent when the card
    /// does not offer it. An `allow_session` answer to a card without it is refused
    /// `not_offered`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_offer: Option<SessionOffer>,
    /// For `write_file` and `edit_file`: what will be written, over which content
    /// (docs/decisions.md H8). Absent on every other card, which then binds as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<WriteCard>,
}

impl ApprovalCard {
    /// The binding of this card: length-prefixed fields, so no two different cards hash
    /// alike. Covers session, call, tool, arguments, grant, session taint, the untrusted
    /// flag and its sources (what each read), the expiry, a write's card (the old content's
    /// hash among it) and the session offer (its scope and how long it lasts): what the owner
    /// is shown. A card without an offer or a write binds as cards did before either existed.
    pub fn bound(&self) -> Hash32 {
        let call = self.call.0.to_be_bytes();
        let expires = self.expires.as_millis().to_be_bytes();
        let untrusted = [u8::from(self.untrusted)];
        let sources = u64::try_from(self.untrusted_by.len())
            .unwrap_or(u64::MAX)
            .to_be_bytes();
        let calls: Vec<[u8; 8]> = self
            .untrusted_by
            .iter()
            .map(|c| c.call.0.to_be_bytes())
            .collect();
        let mut parts: Vec<&[u8]> = vec![
            self.session.as_str().as_bytes(),
            &call,
            self.tool.as_bytes(),
            self.arguments.as_bytes(),
            self.grant.as_bytes(),
            self.session_taint.as_str().as_bytes(),
            &untrusted,
            &expires,
            &sources,
        ];
        for (source, call) in self.untrusted_by.iter().zip(&calls) {
            // An absent `read` and an empty one differ by the marker part.
            let marker: &[u8] = if source.read.is_some() { b"r" } else { b"-" };
            parts.extend([
                source.tool.as_bytes(),
                &call[..],
                marker,
                source.read.as_deref().unwrap_or_default().as_bytes(),
            ]);
            // Another session's call adds its session; a card without one binds as before.
            if let Some(session) = &source.session {
                parts.extend([b"s".as_slice(), session.as_str().as_bytes()]);
            }
        }
        // A write's card adds its parts after a marker; a card without one binds as before.
        let write = self
            .write
            .as_ref()
            .map(WriteCard::parts)
            .unwrap_or_default();
        parts.extend(write.iter().map(Vec::as_slice));
        let base = Hash32::of_parts(parts);
        // An offer binds the card's binding without it, then the offer: a card with an
        // offer can never hash like one without (that would be a SHA-256 collision).
        match &self.session_offer {
            None => base,
            Some(offer) => Hash32::of_parts([
                base.as_bytes().as_slice(),
                b"offer",
                offer.scope.kind().as_bytes(),
                offer.scope.value().unwrap_or_default().as_bytes(),
                &offer.lasts_secs.to_be_bytes(),
            ]),
        }
    }
}

/// One tool call of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallRef {
    pub tool: String,
    pub call: CallId,
    /// What the call read, as it ran: the file or directory path, or the URL (at most
    /// [`MAX_READ`] characters; longer ones end in `…`). Absent for a call that reads
    /// nothing named, and in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    /// The session the call was made in, when it is not the session this reference is
    /// kept for: a prompt that replays what another session read is raised by that call
    /// (docs/decisions.md X9). Absent for the session's own calls, and in records written
    /// before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
}

/// The longest [`CallRef::read`] kept.
pub const MAX_READ: usize = 256;

/// A request with no fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalListing {
    pub pending: Vec<ApprovalCard>,
    /// Cards left out so that the listing fits in one frame (the ones expiring last).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u32,
    /// The session allowances in force, soonest expiring first (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowances: Vec<Allowance>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    Deny,
    /// Approve, and allow for this session what the card's `session_offer` says: only to
    /// a card that offers it (else refused `not_offered`).
    AllowSession,
}

impl Verdict {
    /// Whether the call runs on this answer (`approve` or `allow_session`).
    pub fn runs(self) -> bool {
        matches!(self, Self::Approve | Self::AllowSession)
    }
}

/// The owner's answer to one approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    pub approval: String,
    pub binding: Hash32,
    pub verdict: Verdict,
    /// The Mattermost post the answer came from, for the audit record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<String>,
    /// Who answered, as the owner channel saw it (a Mattermost user id). On the admin
    /// socket brokerd ignores this and records the peer's uid and user name instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// No approval with that id is pending (never issued, or already answered).
    Unknown,
    Expired,
    /// The approval was already answered.
    AlreadyUsed,
    /// The binding does not match the request as it stands now.
    Changed,
    /// The answer came from someone who is not an owner (a Mattermost user id not in
    /// `[gateway] owners`).
    NotOwner,
    /// An `allow_session` answer to a card that does not offer it (its grant says
    /// `always_ask = true`, say). The approval waits on for another answer.
    NotOffered,
    /// An `allow_session` answer while the most allowances brokerd keeps are in force
    /// (revoke one, or approve once). The approval waits on.
    AllowancesFull,
}

impl Refusal {
    /// The name on the wire (`already_used`, `not_owner`, …), the word people are shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Expired => "expired",
            Self::AlreadyUsed => "already_used",
            Self::Changed => "changed",
            Self::NotOwner => "not_owner",
            Self::NotOffered => "not_offered",
            Self::AllowancesFull => "allowances_full",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum AnswerOutcome {
    Accepted,
    Refused { refusal: Refusal },
}

/// What brokerd knows of one session: its taint and untrusted flag only ever rise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionQuery {
    pub session: SessionId,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionInfo {
    pub session: SessionId,
    pub taint: DataClass,
    pub untrusted: bool,
    pub untrusted_by: Vec<CallRef>,
}

/// The grant snapshot in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsInfo {
    pub snapshot: Hash32,
    pub grants: Vec<String>,
}
