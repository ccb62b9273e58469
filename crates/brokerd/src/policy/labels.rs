//! The labels brokerd attaches: what a result carries ([`Labels`]), and what a session is
//! decided at ([`SessionView`]).

use proto::DataClass;
use proto::Grant;

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

    /// What the owner's words are (a chat message, a job's configured prompt), and brokerd's
    /// notices and the core memory: private, trusted (`accounting`, X3-X5). Every prompt
    /// holds some, so no call is decided below it.
    pub const OWNER: Self = Self {
        class: DataClass::Private,
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
    /// Where every session starts, a chat's and a job run's alike, before any tool result:
    /// at the owner's words ([`Labels::OWNER`]), which its first prompt holds. `sessions`
    /// starts each session's state here and the flows analysis decides its first call here:
    /// one value, so the analysis decides at the label brokerd decides at (V24).
    pub const START: Self = Self {
        taint: Labels::OWNER.class,
        untrusted: Labels::OWNER.untrusted,
    };

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
