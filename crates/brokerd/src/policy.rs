//! The one place a decision is made: a pure, deterministic function of the grant snapshot,
//! the validated request and the session's state (and the time, passed in).
//!
//! [`Decision`] has a private field and implements neither `Clone` nor `Deserialize`, so
//! only this module can make one, and the runner takes it by value: a tool runs only on a
//! decision this module made, and each decision runs at most once.
//!
//! ```compile_fail,E0451
//! // Outside `brokerd::policy` a Decision cannot be built: its field is private.
//! let d = brokerd::policy::Decision { kind: unreachable!() };
//! ```
//!
//! ```compile_fail,E0277
//! // Nor can one be read from the wire.
//! let d: brokerd::policy::Decision = serde_json::from_str("{}").unwrap();
//! ```
//!
//! ```compile_fail,E0599
//! // Nor copied to run twice.
//! fn twice(d: brokerd::policy::Decision) { let _ = d.clone(); }
//! ```
//!
//! Rules (docs/grants.md has them for owners):
//! - every grant for the tool is evaluated; deny dominates ask dominates allow; no grant
//!   that applies means deny;
//! - a grant applies when it has not expired and its constraints cover the arguments;
//! - an allowing grant (auto or ask) also needs the session's taint at or below its
//!   `max_taint`; a deny grant denies at any taint;
//! - in an untrusted session a grant's `if_untrusted` mode replaces its mode when stricter;
//! - when nothing applies, the reason is the most specific one: taint too high, else grant
//!   expired, else no grant (with the constraint mismatch as the detail).

use proto::tools::{ArgsError, ToolArgs};
use proto::{DataClass, DenyReason, Grant, Mode, Timestamp};

use daemon::constraints::{self, Covered};
use daemon::grants::Snapshot;

/// What brokerd knows of a session when it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionView {
    pub taint: DataClass,
    pub untrusted: bool,
}

#[derive(Debug)]
pub struct Decision {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Allow {
        grant_id: String,
        grant: Grant,
        covered: Covered,
        approval: Option<Approval>,
    },
    Ask {
        grant_id: String,
        grant: Grant,
        covered: Covered,
    },
    Deny {
        reason: DenyReason,
        grant_id: Option<String>,
        detail: String,
    },
}

/// Who approved an `ask`, for the audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub approver: String,
    pub post: Option<String>,
}

/// A read-only view of a decision, for the caller's control flow and the audit record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'a> {
    Allow {
        grant_id: &'a str,
        approval: Option<&'a Approval>,
    },
    Ask {
        grant_id: &'a str,
    },
    Deny {
        reason: DenyReason,
        grant_id: Option<&'a str>,
        detail: &'a str,
    },
}

impl Decision {
    pub fn outcome(&self) -> Outcome<'_> {
        match &self.kind {
            Kind::Allow {
                grant_id, approval, ..
            } => Outcome::Allow {
                grant_id,
                approval: approval.as_ref(),
            },
            Kind::Ask { grant_id, .. } => Outcome::Ask { grant_id },
            Kind::Deny {
                reason,
                grant_id,
                detail,
            } => Outcome::Deny {
                reason: *reason,
                grant_id: grant_id.as_deref(),
                detail,
            },
        }
    }

    /// The grant that allows (or asks for) this call, and what its constraints covered.
    pub fn grant(&self) -> Option<(&Grant, &Covered)> {
        match &self.kind {
            Kind::Allow { grant, covered, .. } | Kind::Ask { grant, covered, .. } => {
                Some((grant, covered))
            }
            Kind::Deny { .. } => None,
        }
    }

    /// Whether the runner may act on this decision.
    pub(crate) fn permits_run(&self) -> bool {
        matches!(self.kind, Kind::Allow { .. })
    }
}

fn deny(reason: DenyReason, grant_id: Option<&str>, detail: impl Into<String>) -> Decision {
    Decision {
        kind: Kind::Deny {
            reason,
            grant_id: grant_id.map(str::to_owned),
            detail: detail.into(),
        },
    }
}

/// Arguments that did not parse never reach the grants.
pub fn invalid(err: &ArgsError) -> Decision {
    match err {
        ArgsError::UnknownTool(_) => deny(DenyReason::UnknownTool, None, err.to_string()),
        ArgsError::Invalid { .. } => deny(DenyReason::InvalidArguments, None, err.to_string()),
    }
}

/// An `ask` that cannot be put to the owner because too many approvals wait already.
pub(crate) fn too_many_pending(asked: Decision, cap: usize) -> Decision {
    let grant_id = match &asked.kind {
        Kind::Ask { grant_id, .. } => Some(grant_id.as_str()),
        _ => None,
    };
    deny(
        DenyReason::TooManyPendingApprovals,
        grant_id,
        format!("{cap} approvals are already waiting for the owner"),
    )
}

/// The owner approved an `ask`: it becomes an allow that records who approved. Anything
/// else is returned unchanged.
pub(crate) fn approve(asked: Decision, approval: Approval) -> Decision {
    match asked.kind {
        Kind::Ask {
            grant_id,
            grant,
            covered,
        } => Decision {
            kind: Kind::Allow {
                grant_id,
                grant,
                covered,
                approval: Some(approval),
            },
        },
        other => Decision { kind: other },
    }
}

/// The owner refused, or the approval expired.
pub(crate) fn refuse(asked: Decision, reason: DenyReason, detail: impl Into<String>) -> Decision {
    let grant_id = match &asked.kind {
        Kind::Ask { grant_id, .. } | Kind::Allow { grant_id, .. } => Some(grant_id.as_str()),
        Kind::Deny { grant_id, .. } => grant_id.as_deref(),
    };
    deny(reason, grant_id, detail)
}

/// How strict a mode is, for "deny dominates ask dominates allow".
fn rank(mode: Mode) -> u8 {
    match mode {
        Mode::Auto => 0,
        Mode::Ask => 1,
        Mode::Deny => 2,
    }
}

/// The mode a grant takes for this session.
fn effective_mode(grant: &Grant, session: SessionView) -> Mode {
    match grant.if_untrusted {
        Some(stricter) if session.untrusted && rank(stricter.into()) > rank(grant.mode) => {
            stricter.into()
        }
        _ => grant.mode,
    }
}

/// Decides one call.
pub fn decide(
    snapshot: &Snapshot,
    args: &ToolArgs,
    session: SessionView,
    now: Timestamp,
) -> Decision {
    let tool = args.tool();
    // The winner so far: (rank, result class, untrusted, id, grant, covered). Among grants of
    // one mode the most conservative result labels win, then the smallest id, so the
    // outcome never depends on directory order.
    let mut best: Option<(u8, DataClass, bool, &str, &Grant, Covered)> = None;
    let mut too_tainted: Option<&str> = None;
    let mut expired: Option<&str> = None;
    let mut mismatch: Option<String> = None;
    for (id, grant) in snapshot.for_tool(tool) {
        if grant.expires.is_some_and(|e| e <= now) {
            expired.get_or_insert(id);
            continue;
        }
        let covered = match constraints::check(grant, args) {
            Ok(c) => c,
            Err(why) => {
                mismatch.get_or_insert(format!("grant {id}: {why}"));
                continue;
            }
        };
        let mode = effective_mode(grant, session);
        if mode != Mode::Deny && session.taint > grant.max_taint {
            too_tainted.get_or_insert(id);
            continue;
        }
        let key = (rank(mode), grant.result_class, grant.untrusted);
        let better = match &best {
            None => true,
            Some((r, c, u, ..)) => key > (*r, *c, *u),
        };
        if better {
            best = Some((key.0, key.1, key.2, id, grant, covered));
        }
    }
    match best {
        Some((2, _, _, id, _, _)) => deny(
            DenyReason::DeniedByGrant,
            Some(id),
            format!("grant {id} denies this"),
        ),
        Some((1, _, _, id, grant, covered)) => Decision {
            kind: Kind::Ask {
                grant_id: id.to_owned(),
                grant: grant.clone(),
                covered,
            },
        },
        Some((_, _, _, id, grant, covered)) => Decision {
            kind: Kind::Allow {
                grant_id: id.to_owned(),
                grant: grant.clone(),
                covered,
                approval: None,
            },
        },
        None => match (too_tainted, expired) {
            (Some(id), _) => deny(
                DenyReason::TaintTooHigh,
                Some(id),
                format!(
                    "the session is {}, above what grant {id} allows",
                    session.taint
                ),
            ),
            (None, Some(id)) => deny(
                DenyReason::GrantExpired,
                Some(id),
                format!("grant {id} has expired"),
            ),
            (None, None) => deny(
                DenyReason::NoGrant,
                None,
                mismatch.unwrap_or_else(|| format!("no grant for {tool}")),
            ),
        },
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
