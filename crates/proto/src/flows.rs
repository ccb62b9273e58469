//! What the grants let a hostile model do without asking (issue 27 point 2,
//! docs/verify.md): brokerd's answer to `flows_query` on its admin side, and what
//! `brokerd --flows --json` prints for the NixOS module. brokerd computes it with the policy
//! it decides by; this is only its shape.

use serde::{Deserialize, Serialize};

use crate::{DataClass, Hash32, JobName};

/// Every flow the grant snapshot allows with no approval, most severe first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowsReport {
    /// The snapshot analysed.
    pub snapshot: Hash32,
    /// The grant ids the snapshot holds.
    pub grants: Vec<String>,
    pub flows: Vec<Flow>,
    /// Every source of every scope, public ones included: what the self-test holds a chain's
    /// source to (a result carries the label its call is decided at too, and a session starts
    /// private, so its own label is said here alone).
    #[serde(default)]
    pub sources: Vec<SourceLabel>,
}

/// A source the grants allow without asking in a scope (an ordinary session, or one job's
/// runs), and the label it leaves the session at by itself: what a flow's `source`, `class`
/// and `untrusted` say, for every source, a public one included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceLabel {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobName>,
    pub source: Step,
    pub class: DataClass,
    pub untrusted: bool,
}

/// How bad a flow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Something secret can leave the box.
    SecretOut,
    /// Something private can leave the box.
    PrivateOut,
    /// Content that may carry injected text can change files of yours.
    UntrustedWrite,
}

impl Severity {
    /// The wire name, as the module's `verify.denyFlows` and `bxctl verify` name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SecretOut => "secret_out",
            Self::PrivateOut => "private_out",
            Self::UntrustedWrite => "untrusted_write",
        }
    }
}

/// One chain: a source read in a new session (at the owner's label, private), then a sink (or, for an untrusted source, a
/// write) that applies at the label the source left the session at, each allowed without
/// asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    pub severity: Severity,
    /// The job whose runs can complete it; absent for ordinary sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobName>,
    pub source: Step,
    /// The label the source leaves the session at.
    pub class: DataClass,
    pub untrusted: bool,
    pub sink: Step,
    /// One line a person can act on: what can happen, and what stops it.
    pub text: String,
}

/// One call of a flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The grant that allows it; absent for a job's delivery (the configuration allows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// The tool, or `deliver` for a job's delivery.
    pub tool: String,
    /// What it reads or where it sends, as the call names it (a path, a URL's host).
    pub what: String,
}
