//! Writes obey the labels of where they will be read back (brief decision 16,
//! docs/decisions.md H9): what every grant that reaches a place says of it, and the rule
//! brokerd's policy applies to a write there. Pure over the snapshot: no file is looked at.

use proto::{DataClass, DenyReason};

use crate::Snapshot;
use crate::constraints::reaches;

/// What the grants that reach a place (a file, or a directory with all below it) say of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The lowest `result_class` among them, and the first grant (by id) that gives it:
    /// the lowest label the place's content may be read back under.
    pub lowest: Option<(DataClass, String)>,
    /// The highest `result_class` among them: how a read of the place is labelled.
    pub highest: Option<DataClass>,
    /// Whether any of them says `untrusted = true`.
    pub untrusted: bool,
    /// The grants that say `untrusted = false` (only the owner writes there), by id.
    pub owner_only: Vec<String>,
}

/// The labels of `place` (normalised): every grant of the snapshot, of any tool and any
/// mode, expired or not, ordinary or a job's, that [`reaches`] it, with `subtree` as a
/// unit that binds the place would have it (a file: `false`; a run's writable working
/// directory: `true`).
pub fn place_labels(snapshot: &Snapshot, place: &str, subtree: bool) -> Place {
    let mut out = Place::default();
    for (id, g) in snapshot.iter().filter(|(_, g)| reaches(g, place, subtree)) {
        if out.lowest.as_ref().is_none_or(|(c, _)| g.result_class < *c) {
            out.lowest = Some((g.result_class, id.to_owned()));
        }
        out.highest = out.highest.max(Some(g.result_class));
        if g.untrusted {
            out.untrusted = true;
        } else {
            out.owner_only.push(id.to_owned());
        }
    }
    out
}

/// The label a call is decided at (brief decision 15): its session's, raised by its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecidedAt {
    pub taint: DataClass,
    pub untrusted: bool,
}

/// What the labels say of a write that its grants allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The labels raise no objection: the grants' mode stands.
    Stands,
    /// An untrusted write where only the owner writes, which the deciding grant's
    /// `if_untrusted = "ask"` lets the owner approve: the call is asked.
    Ask,
    Refused(Refusal),
}

/// Why the labels refuse a write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The call is decided at a taint above the place's lowest class.
    #[error(
        "the session is {taint}, and what is written here reads back as {lowest} (grant \
         {grant}): no write down"
    )]
    WriteDown {
        taint: DataClass,
        lowest: DataClass,
        grant: String,
    },
    /// An untrusted call where these grants say only the owner writes.
    #[error(
        "the session has read untrusted content, and only the owner writes here (untrusted \
         = false in {})",
        grants.join(", ")
    )]
    UntrustedWrite { grants: Vec<String> },
}

impl Refusal {
    pub fn reason(&self) -> DenyReason {
        match self {
            Self::WriteDown { .. } => DenyReason::WriteDown,
            Self::UntrustedWrite { .. } => DenyReason::UntrustedWrite,
        }
    }
}

/// The rule, after the grants' mode allowed the write (no grant, a deny grant and
/// `taint_too_high` come first):
/// 1. *no write down*: a decided-at taint above the place's lowest class is refused
///    (`write_down`), never asked;
/// 2. *integrity*: an untrusted decided-at label where any reaching grant says
///    `untrusted = false` is refused (`untrusted_write`), unless `opt_in` (the grant whose
///    mode decided has `if_untrusted = "ask"`), when it is asked.
///
/// A place no grant reaches is read back through none: nothing to refuse (a covered write
/// is always reached by its own grant).
pub fn rule(place: &Place, at: DecidedAt, opt_in: bool) -> Verdict {
    if let Some((lowest, grant)) = &place.lowest
        && at.taint > *lowest
    {
        return Verdict::Refused(Refusal::WriteDown {
            taint: at.taint,
            lowest: *lowest,
            grant: grant.clone(),
        });
    }
    if at.untrusted && !place.owner_only.is_empty() {
        if opt_in {
            return Verdict::Ask;
        }
        return Verdict::Refused(Refusal::UntrustedWrite {
            grants: place.owner_only.clone(),
        });
    }
    Verdict::Stands
}
