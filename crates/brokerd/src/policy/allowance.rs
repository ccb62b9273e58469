//! Allow for this session: what an owner's `allow_session` answer covers (docs/broker.md,
//! docs/decisions.md O13-O16). Pure rules, like the rest of `policy`; the allowances
//! themselves are held by the desk (`ask::allowances`), and a covered call becomes an allow
//! only through the desk's `Approved`, by [`super::approve`], never here.
//!
//! - **Scope** ([`scope`]): a function of the subject the deciding grant covered
//!   (`grants::constraints::Subject`), never of the model's raw words: a path tool's
//!   normalised path (later calls at or below it), a URL tool's host (later calls to that
//!   host, any scheme, port and path), a note tool's note name, and the whole grant where
//!   the tool names nothing narrower (`consult`, whose one destination is brokerd's
//!   configured endpoint; `note_list`; the searches, whose reach is the grant's). A subject
//!   with no rule here gets no offer: a new tool is asked every time until its rule is
//!   written (`write_file` and `edit_file` join as path tools; `run` and MCP tools need a
//!   rule of their own).
//! - **Label** ([`within`]): a later call is covered only while the label it is decided at
//!   (X9) is at or below the label the owner answered at: no higher taint, and untrusted
//!   only if it already was.
//! - **Offer** ([`offer`]): only for an `ask` no asking grant marks `always_ask`, whose
//!   subject has a scope, and whose own result cannot lift the session above the label it is
//!   decided at (or the allowance would end with the very call it came from).

use std::time::Duration;

use grants::constraints::{self, Subject};
use proto::allowance::{MAX_SCOPE, Scope, SessionOffer};
use proto::tools::{NoteReadArgs, NoteWriteArgs, ToolArgs};
use proto::{Grant, Hash32};

use super::{Decision, Outcome, SessionView};

/// What an allowance given for this decision's call would cover, as a function of the
/// subject its deciding grant covered; `None` when the tool's subject has no rule, or names
/// more than [`MAX_SCOPE`] bytes.
pub fn scope(decision: &Decision) -> Option<Scope> {
    named(decision).filter(|s| s.value().is_none_or(|v| v.len() <= MAX_SCOPE))
}

fn named(decision: &Decision) -> Option<Scope> {
    let (grant, covered) = decision.grant()?;
    let args = decision.args()?;
    match constraints::subject(&grant.tool)? {
        Subject::Path => covered.path.clone().map(|path| Scope::Path { path }),
        Subject::Url => covered.host.as_ref().map(|host| Scope::Host {
            host: host.to_string(),
        }),
        // One destination, the configured endpoint: every prompt goes to the same place.
        Subject::Prompt => Some(Scope::Grant),
        Subject::Note => match args {
            ToolArgs::NoteRead(NoteReadArgs { name })
            | ToolArgs::NoteWrite(NoteWriteArgs { name, .. }) => {
                Some(Scope::Note { name: name.clone() })
            }
            ToolArgs::NoteList(_) | ToolArgs::NoteSearch(_) | ToolArgs::SessionSearch(_) => {
                Some(Scope::Grant)
            }
            _ => None,
        },
        // An MCP tool's arguments mean what its server says they mean: no rule yet, so an
        // MCP call is asked every time (O14).
        Subject::Mcp => None,
        // A run's arguments are a program's to interpret: no rule yet either (O14).
        Subject::Program => None,
    }
}

/// Whether an allowance's `scope` holds a later call whose own scope is `call` (both of
/// the same grant, so of one subject).
pub fn holds(scope: &Scope, call: &Scope) -> bool {
    match (scope, call) {
        (Scope::Path { path: root }, Scope::Path { path }) => constraints::is_under(path, root),
        (Scope::Host { host: a }, Scope::Host { host: b })
        | (Scope::Note { name: a }, Scope::Note { name: b }) => a == b,
        (Scope::Grant, Scope::Grant) => true,
        _ => false,
    }
}

/// Whether a call decided at `view` stays within `ceiling`, the label an allowance was
/// given at: no higher taint, and untrusted only if the ceiling already was.
pub fn within(view: SessionView, ceiling: SessionView) -> bool {
    view.taint <= ceiling.taint && (!view.untrusted || ceiling.untrusted)
}

/// What the card of an `ask` decided at `decided` offers for the session, lasting `lasts`
/// (whole seconds, at most an hour: the configuration checks it); `None` when it offers
/// nothing.
pub fn offer(decision: &Decision, decided: SessionView, lasts: Duration) -> Option<SessionOffer> {
    if !matches!(decision.outcome(), Outcome::Ask { .. }) || decision.always_ask() {
        return None;
    }
    // The call's own result raises the session by these labels (at least: what its unit
    // binds may add more); above the answer's label, the allowance would end at once.
    let result = decision.labels()?;
    if !within(decided.raised(result), decided) {
        return None;
    }
    Some(SessionOffer {
        scope: scope(decision)?,
        lasts_secs: u32::try_from(lasts.as_secs()).unwrap_or(u32::MAX),
    })
}

/// The grant as the owner allowed it: the SHA-256 of its canonical text. A reload that
/// changes the grant changes this, and its allowances no longer cover anything.
pub fn grant_text(grant: &Grant) -> Hash32 {
    Hash32::digest(grant.canonical().as_bytes())
}

#[cfg(test)]
mod tests;
