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
//! - a grant covers a call when its constraints cover the arguments, and applies when it
//!   covers it and has not expired;
//! - an allowing grant (auto or ask) also needs the session's taint at or below its
//!   `max_taint`; a deny grant denies at any taint;
//! - in an untrusted session a grant's `if_untrusted` mode replaces its mode when stricter;
//! - the mode comes from the grants that apply, but the result's labels come from every
//!   grant that covers the call, whether or not it applies now: the highest `result_class`
//!   and the OR of `untrusted` ([`Labels`]). No grant can unlabel what another labels;
//! - when nothing applies, the reason is the most specific one among the grants that cover
//!   the call: taint too high, else grant expired, else no grant (with the constraint
//!   mismatch as the detail).

use proto::tools::{ArgsError, ToolArgs};
use proto::{DataClass, DecisionRecord, DenyReason, Grant, JobName, Mode, Timestamp};

use grants::Snapshot;
use grants::constraints::{self, Covered};

/// What a result is labelled: the class it raises the session to, and whether it may carry
/// injected text. Joined over grants: the highest class, the OR of the flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Labels {
    pub class: DataClass,
    pub untrusted: bool,
}

impl Labels {
    /// The identity of [`Labels::join`]: public and trusted.
    pub const NONE: Self = Self {
        class: DataClass::Public,
        untrusted: false,
    };

    /// The labels of a grant's results.
    pub fn of(grant: &Grant) -> Self {
        Self {
            class: grant.result_class,
            untrusted: grant.untrusted,
        }
    }

    /// Both labels at least as strict as either side's.
    #[must_use]
    pub fn join(self, other: Self) -> Self {
        Self {
            class: self.class.max(other.class),
            untrusted: self.untrusted || other.untrusted,
        }
    }
}

/// What brokerd knows of a session when it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionView {
    pub taint: DataClass,
    pub untrusted: bool,
}

impl SessionView {
    /// What a call is decided on: the session's taint and flag (as the owner sees them)
    /// raised by the labels of the prompt that produced the call (`accounting`).
    #[must_use]
    pub fn raised(self, prompt: Labels) -> Self {
        Self {
            taint: self.taint.max(prompt.class),
            untrusted: self.untrusted || prompt.untrusted,
        }
    }
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
        labels: Labels,
        approval: Option<Approval>,
    },
    Ask {
        grant_id: String,
        grant: Grant,
        covered: Covered,
        labels: Labels,
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

    /// The labels of this call's result: joined over every grant for the tool that covers
    /// the call (the deciding one among them). The runner joins what else it binds.
    pub fn labels(&self) -> Option<Labels> {
        match &self.kind {
            Kind::Allow { labels, .. } | Kind::Ask { labels, .. } => Some(*labels),
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
pub fn too_many_pending(asked: Decision, cap: usize) -> Decision {
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
pub fn approve(asked: Decision, approval: Approval) -> Decision {
    match asked.kind {
        Kind::Ask {
            grant_id,
            grant,
            covered,
            labels,
        } => Decision {
            kind: Kind::Allow {
                grant_id,
                grant,
                covered,
                labels,
                approval: Some(approval),
            },
        },
        other => Decision { kind: other },
    }
}

/// The owner refused, or the approval expired.
pub fn refuse(asked: Decision, reason: DenyReason, detail: impl Into<String>) -> Decision {
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

/// The labels of what a tool unit has bound: joined over every grant, of any tool, whose
/// paths reach one of the `bound` paths (see [`constraints::reaches`]). A directory bound for
/// `list_dir` brings all that is below it, which a grant for another tool may label higher.
pub fn bound_labels(snapshot: &Snapshot, bound: &[&str], subtree: bool) -> Labels {
    snapshot
        .iter()
        .filter(|(_, g)| bound.iter().any(|b| constraints::reaches(g, b, subtree)))
        .fold(Labels::NONE, |l, (_, g)| l.join(Labels::of(g)))
}

/// A call in a job session whose run is not in progress: no grant is consulted.
pub fn job_not_running() -> Decision {
    deny(
        DenyReason::JobNotRunning,
        None,
        "this job session's run is not in progress: a job session's calls are served only \
         while its run lasts",
    )
}

/// A call that is not the model's witnessed call, or ran already (`witness::Witness::claim`).
pub fn unwitnessed(reason: DenyReason, detail: String) -> Decision {
    deny(reason, None, detail)
}

/// Decides one call of an ordinary session.
pub fn decide(
    snapshot: &Snapshot,
    args: &ToolArgs,
    session: SessionView,
    now: Timestamp,
) -> Decision {
    decide_in(snapshot, args, session, None, now)
}

/// Whether `grant` may decide a call of a session in `job` (`None`: an ordinary session).
/// A job's grants apply to its runs only, and an ordinary grant to ordinary sessions only,
/// except that an ordinary deny also denies in a job: a job gets no right it was not
/// written, and loses none of the owner's prohibitions.
fn in_scope(grant: &Grant, job: Option<&JobName>) -> bool {
    match (&grant.job, job) {
        (Some(g), Some(j)) => g == j,
        (Some(_), None) => false,
        (None, None) => true,
        (None, Some(_)) => grant.mode == Mode::Deny,
    }
}

/// Decides one call of a session in `job` (`None`: an ordinary session): only the grants
/// in scope ([`in_scope`]) decide, while every covering grant labels the result.
pub fn decide_in(
    snapshot: &Snapshot,
    args: &ToolArgs,
    session: SessionView,
    job: Option<&JobName>,
    now: Timestamp,
) -> Decision {
    let tool = args.tool();
    // The deciding grant so far: the strictest mode, then the smallest id (grants come in id
    // order, so the first of a mode stays), so the outcome never depends on directory order.
    let mut best: Option<(u8, &str, &Grant, Covered)> = None;
    let mut labels = Labels::NONE;
    let mut too_tainted: Option<&str> = None;
    let mut expired: Option<&str> = None;
    let mut mismatch: Option<String> = None;
    for (id, grant) in snapshot.for_tool(tool) {
        let covered = match constraints::check(grant, args) {
            Ok(c) => c,
            Err(why) => {
                mismatch.get_or_insert(format!("grant {id}: {why}"));
                continue;
            }
        };
        // Every covering grant labels the result, applying or not, in scope or not.
        labels = labels.join(Labels::of(grant));
        if !in_scope(grant, job) {
            continue;
        }
        if grant.expires.is_some_and(|e| e <= now) {
            expired.get_or_insert(id);
            continue;
        }
        let mode = effective_mode(grant, session);
        if mode != Mode::Deny && session.taint > grant.max_taint {
            too_tainted.get_or_insert(id);
            continue;
        }
        if best.as_ref().is_none_or(|(r, ..)| rank(mode) > *r) {
            best = Some((rank(mode), id, grant, covered));
        }
    }
    match best {
        Some((2, id, _, _)) => deny(
            DenyReason::DeniedByGrant,
            Some(id),
            format!("grant {id} denies this"),
        ),
        Some((r, id, grant, covered)) => {
            let (grant_id, grant) = (id.to_owned(), grant.clone());
            Decision {
                kind: if r == 1 {
                    Kind::Ask {
                        grant_id,
                        grant,
                        covered,
                        labels,
                    }
                } else {
                    Kind::Allow {
                        grant_id,
                        grant,
                        covered,
                        labels,
                        approval: None,
                    }
                },
            }
        }
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

/// A decision as its audit record says it.
pub(crate) fn record(decision: &Decision) -> DecisionRecord {
    match decision.outcome() {
        Outcome::Allow {
            grant_id,
            approval: None,
        } => DecisionRecord::Allowed {
            grant: grant_id.to_owned(),
        },
        Outcome::Allow {
            grant_id,
            approval: Some(a),
        } => DecisionRecord::Approved {
            grant: grant_id.to_owned(),
            approver: a.approver.clone(),
            post: a.post.clone(),
        },
        Outcome::Ask { grant_id } => DecisionRecord::Denied {
            reason: DenyReason::ApprovalRefused,
            grant: Some(grant_id.to_owned()),
            detail: Some("an ask without an answer".into()),
        },
        Outcome::Deny {
            reason,
            grant_id,
            detail,
        } => DecisionRecord::Denied {
            reason,
            grant: grant_id.map(str::to_owned),
            detail: Some(detail.to_owned()),
        },
    }
}

/// What loopd is answered for a decision its audit record says was denied: the reason and
/// the detail the record holds, exactly (`None`: it was not denied). The one way a denial's
/// answer is made, so the audit line of a witnessed denial is also the durable record of
/// the tool message loopd makes of it (docs/decisions.md X8).
pub fn denied(record: &DecisionRecord) -> Option<proto::ToolResponse> {
    match record {
        DecisionRecord::Denied { reason, detail, .. } => Some(proto::ToolResponse::Denied {
            reason: *reason,
            detail: detail.clone(),
        }),
        DecisionRecord::Allowed { .. } | DecisionRecord::Approved { .. } => None,
    }
}
