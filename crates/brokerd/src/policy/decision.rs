//! What a decision is, and the only ways one changes after it is made: an `ask` the owner
//! approved becomes an allow (only with the desk's [`Approved`], which only the desk makes:
//! for the owner's answer to the card, or for a call an allowance the owner gave for the
//! session covers), anything else becomes a denial. An allow carries
//! exactly what it authorises: the call's arguments as the deciding grant covered them, which
//! the runner compares with what it is asked to run.

use proto::tools::stage::StageFailure;
use proto::tools::{ArgsError, ToolArgs};
use proto::{DecisionRecord, DenyReason, Grant, ToolFailure, ToolResponse};

use grants::constraints::Covered;

use super::Labels;
use crate::ask::approved::Approved;

#[derive(Debug)]
pub struct Decision {
    pub(super) kind: Kind,
}

#[derive(Debug)]
pub(super) enum Kind {
    Allow {
        grant_id: String,
        grant: Grant,
        covered: Covered,
        labels: Labels,
        /// The arguments as the grant covered them: what this allow authorises to run.
        args: ToolArgs,
        approval: Option<Approval>,
    },
    Ask {
        grant_id: String,
        grant: Grant,
        covered: Covered,
        labels: Labels,
        args: ToolArgs,
        /// A grant that asks for this call says `always_ask = true`: the owner answers each
        /// time, and no allowance covers it.
        always_ask: bool,
    },
    Deny {
        reason: DenyReason,
        grant_id: Option<String>,
        detail: String,
    },
    /// A write the grant allowed or asks for, which cannot be made (brokerd's look refused
    /// the target, or the new text cannot be computed): nothing is asked or written. Its
    /// answer is a failure labelled like a read of the target (`labels`).
    Failed {
        grant_id: String,
        labels: Labels,
        failure: StageFailure,
        detail: String,
    },
}

/// Who approved an `ask`, for the audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub approver: String,
    pub post: Option<String>,
    /// The session allowance that approved it without asking.
    pub allowance: Option<String>,
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
    Failed {
        grant_id: &'a str,
        failure: StageFailure,
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
            Kind::Failed {
                grant_id,
                failure,
                detail,
                ..
            } => Outcome::Failed {
                grant_id,
                failure: *failure,
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
            Kind::Deny { .. } | Kind::Failed { .. } => None,
        }
    }

    /// The labels of this call's result: joined over every grant for the tool that covers
    /// the call (the deciding one among them), and for the hands every grant that reaches
    /// the place they write or bind (`super::hands`). The runner joins what else it binds.
    /// A write that failed before it was asked is labelled alike: its answer depends on
    /// the target's content.
    pub fn labels(&self) -> Option<Labels> {
        match &self.kind {
            Kind::Allow { labels, .. } | Kind::Ask { labels, .. } | Kind::Failed { labels, .. } => {
                Some(*labels)
            }
            Kind::Deny { .. } => None,
        }
    }

    /// The arguments this decision is about, as the deciding grant covered them (a path
    /// normalised, a URL's host lowered): what an allow authorises to run, and what an
    /// `ask` shows the owner. `None` for a denial.
    pub fn args(&self) -> Option<&ToolArgs> {
        match &self.kind {
            Kind::Allow { args, .. } | Kind::Ask { args, .. } => Some(args),
            Kind::Deny { .. } | Kind::Failed { .. } => None,
        }
    }

    /// Whether a grant that asks for this call says `always_ask = true` (false for
    /// anything but an `ask`).
    pub fn always_ask(&self) -> bool {
        matches!(
            &self.kind,
            Kind::Ask {
                always_ask: true,
                ..
            }
        )
    }

    /// Whether this decision lets the runner run `call`: an allow, for exactly the
    /// arguments it authorises (the same tool, for an MCP call the same server and tool,
    /// and the same arguments).
    pub(crate) fn authorises(&self, call: &ToolArgs) -> bool {
        match &self.kind {
            Kind::Allow { args, .. } => args == call,
            Kind::Ask { .. } | Kind::Deny { .. } | Kind::Failed { .. } => false,
        }
    }

    /// Whether this decision lets the runner look at a write's target before the owner is
    /// asked: an allow or an ask of `write_file` or `edit_file` (the look only reads, and
    /// every grant of those tools reads back what it covers: docs/decisions.md H2, H9).
    pub(crate) fn may_look(&self) -> bool {
        match &self.kind {
            Kind::Allow { args, .. } | Kind::Ask { args, .. } => {
                matches!(args, ToolArgs::WriteFile(_) | ToolArgs::EditFile(_))
            }
            Kind::Deny { .. } | Kind::Failed { .. } => false,
        }
    }
}

pub(super) fn deny(
    reason: DenyReason,
    grant_id: Option<&str>,
    detail: impl Into<String>,
) -> Decision {
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

/// The owner approved an `ask`: it becomes an allow that records who approved (and the
/// allowance, when one covered it). Only the approval desk makes an [`Approved`] (the
/// owner's approve, taken for the card that was shown; or an allowance the owner gave for
/// the session, for a call it covers), so no other code can turn an `ask` into an allow.
/// Anything else is returned unchanged.
pub fn approve(asked: Decision, approved: Approved) -> Decision {
    match asked.kind {
        Kind::Ask {
            grant_id,
            grant,
            covered,
            labels,
            args,
            always_ask: _,
        } => Decision {
            kind: Kind::Allow {
                grant_id,
                grant,
                covered,
                labels,
                args,
                approval: Some(Approval {
                    approver: approved.by().to_owned(),
                    post: approved.post().map(str::to_owned),
                    allowance: approved.allowance().map(str::to_owned),
                }),
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
        Kind::Failed { grant_id, .. } => Some(grant_id.as_str()),
    };
    deny(reason, grant_id, detail)
}

/// A write the grant allowed or asks for, which cannot be made: what brokerd's look found,
/// or why the new text cannot be computed. Nothing is asked or written. Anything but an
/// allow or an ask is returned unchanged.
pub fn write_failed(decided: Decision, failure: StageFailure, detail: String) -> Decision {
    match decided.kind {
        Kind::Allow {
            grant_id, labels, ..
        }
        | Kind::Ask {
            grant_id, labels, ..
        } => Decision {
            kind: Kind::Failed {
                grant_id,
                labels,
                failure,
                detail,
            },
        },
        other => Decision { kind: other },
    }
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
            allowance: a.allowance.clone(),
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
        Outcome::Failed {
            grant_id,
            failure,
            detail,
        } => DecisionRecord::Failed {
            grant: grant_id.to_owned(),
            failure,
            detail: detail.to_owned(),
        },
    }
}

/// What loopd is answered for a decision its audit record says was denied: the reason and
/// the detail the record holds, exactly (`None`: it was not denied). The one way a denial's
/// answer is made, so the audit line of a witnessed denial is also the durable record of
/// the tool message loopd makes of it (docs/decisions.md X8).
pub fn denied(record: &DecisionRecord) -> Option<ToolResponse> {
    match record {
        DecisionRecord::Denied { reason, detail, .. } => Some(ToolResponse::Denied {
            reason: *reason,
            detail: detail.clone(),
        }),
        DecisionRecord::Allowed { .. }
        | DecisionRecord::Approved { .. }
        | DecisionRecord::Failed { .. } => None,
    }
}

/// What loopd is answered for a write its audit record says failed before anything was
/// asked or written: brokerd's words and the typed failure (`None`: it did not fail so).
pub fn failed(record: &DecisionRecord) -> Option<ToolResponse> {
    match record {
        DecisionRecord::Failed {
            failure, detail, ..
        } => Some(ToolResponse::Failed {
            message: detail.clone(),
            failure: Some(ToolFailure::Write { failure: *failure }),
        }),
        _ => None,
    }
}
