//! Allowing for a session: the owner's third answer to an approval (docs/broker.md,
//! "Allow for this session"). An approval card may offer it ([`SessionOffer`], bound by the
//! card); the owner's `allow_session` answer runs the call and makes an [`Allowance`]: later
//! calls of the same session under the same grant whose covered subject falls in its
//! [`Scope`] run without asking, for at most an hour, and only while the label each is
//! decided at stays at or below the label the card showed. The owner channels list
//! allowances (`approval_listing`, `broker_status`) and revoke them (`allowance_revoke`,
//! admin side only).

use serde::{Deserialize, Serialize};

use crate::{DataClass, SessionId, Timestamp};

/// The longest an allowance lasts, from the owner's answer: one hour.
pub const MAX_ALLOWANCE_SECS: u32 = 3600;

/// The longest path, host or note name a scope holds, in bytes: a call whose subject is
/// longer gets no session offer (so every allowance brokerd keeps fits a listing's frame).
pub const MAX_SCOPE: usize = 1024;

/// What an allowance covers of the grant's calls: the subject the grant covered, as the
/// policy named it (`brokerd::policy::allowance`). Whether a later call falls in it is
/// brokerd's rule alone; here it is data.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Scope {
    /// Calls whose covered (normalised) path is this path or lies below it.
    Path { path: String },
    /// Calls whose covered URL is on this host (lower case, punycode; any scheme, port and
    /// path).
    Host { host: String },
    /// Calls on this note, by its name.
    Note { name: String },
    /// Every call the grant covers: the tool names nothing narrower (`consult`, whose one
    /// destination is brokerd's configured endpoint; `note_list`; the searches, whose reach
    /// is the grant's).
    Grant,
}

impl Scope {
    /// The wire name of the kind: `path`, `host`, `note` or `grant`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Path { .. } => "path",
            Self::Host { .. } => "host",
            Self::Note { .. } => "note",
            Self::Grant => "grant",
        }
    }

    /// The path, host or note name; `None` for [`Scope::Grant`].
    pub fn value(&self) -> Option<&str> {
        match self {
            Self::Path { path } => Some(path),
            Self::Host { host } => Some(host),
            Self::Note { name } => Some(name),
            Self::Grant => None,
        }
    }
}

/// What "allow for this session" would allow, as an approval card offers it. Absent from a
/// card whose grant says `always_ask = true`, whose tool has no subject an allowance can
/// name, or whose call's own result would raise the session above the label the card
/// shows (the allowance would end with the call it came from).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionOffer {
    pub scope: Scope,
    /// How long the allowance lasts from the owner's answer, in seconds (at most
    /// [`MAX_ALLOWANCE_SECS`]).
    pub lasts_secs: u32,
}

/// A session allowance in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allowance {
    /// 128 bits from the OS RNG, as 32 lower-case hex characters.
    pub allowance: String,
    pub session: SessionId,
    pub tool: String,
    pub grant: String,
    pub scope: Scope,
    /// The label the owner answered at (the card's): later calls decided above it are
    /// asked again, and the allowance ends.
    pub session_taint: DataClass,
    #[serde(default, skip_serializing_if = "crate::grant::is_false")]
    pub untrusted: bool,
    /// The approval whose answer made it.
    pub approval: String,
    /// Who answered: a Mattermost user id, or the local admin's uid and name.
    pub by: String,
    /// The Mattermost post the answer came from, if it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<String>,
    pub granted: Timestamp,
    pub expires: Timestamp,
}

/// Owner channel (admin side only): end one allowance now. Answered with
/// `allowance_revoked`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowanceRevoke {
    /// The whole id (bxctl finds it from a prefix among those in force).
    pub allowance: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum RevokeOutcome {
    /// It was in force, and is no more (audited `allowance_revoked`).
    Revoked { allowance: Box<Allowance> },
    /// No allowance with that id is in force: never made, revoked, expired, or ended
    /// because its session's label rose or brokerd restarted.
    NotInForce,
}
