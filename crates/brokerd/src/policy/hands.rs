//! The hands' rules after the grants' mode (docs/decisions.md H9, H11): a write is decided
//! by the labels of where it will be read back (no write down, integrity), and what the
//! hands write or bind labels their answer like a read of it.
//!
//! A `write_file` or `edit_file` writes its covered path (a file: every grant whose paths
//! reach it); a `run` with a `workdir` writes that directory and all below it, and binds its
//! `paths` read-only (each with all below it). What the write rule refuses is refused here,
//! before anything looks at the target or asks the owner.

use grants::writes::{DecidedAt, Place, Refusal, Verdict, place_labels, rule};
use proto::tools::{EditFileArgs, ToolArgs, WriteFileArgs};
use proto::{DataClass, Grant, IfUntrusted};

use grants::Snapshot;

use super::{Labels, SessionView};

/// What the hands' rules make of an allow or an ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Judged {
    /// The grants' mode stands; the answer also takes these labels.
    Stands(Labels),
    /// Asked, whatever the mode was (an untrusted write the grant's `if_untrusted = "ask"`
    /// lets the owner approve); the answer also takes these labels.
    Ask(Labels),
    Refused(Refusal),
}

/// A place's labels as a read of it would take them: its highest class, untrusted if any
/// grant reaching it says so.
fn read_back(place: &Place) -> Labels {
    Labels {
        class: place.highest.unwrap_or(DataClass::Public),
        untrusted: place.untrusted,
    }
}

/// The hands' rules for `args` (as `grant` covered them: a path normalised, see
/// [`super::effective`]), decided at `session`. Any other tool: nothing to add.
pub(super) fn judge(
    snapshot: &Snapshot,
    args: &ToolArgs,
    grant: &Grant,
    session: SessionView,
) -> Judged {
    let at = DecidedAt {
        taint: session.taint,
        untrusted: session.untrusted,
    };
    let opt_in = grant.if_untrusted == Some(IfUntrusted::Ask);
    let written = |place: &str, subtree: bool| {
        let place = place_labels(snapshot, place, subtree);
        (rule(&place, at, opt_in), read_back(&place))
    };
    match args {
        ToolArgs::WriteFile(WriteFileArgs { path, .. })
        | ToolArgs::EditFile(EditFileArgs { path, .. }) => {
            let (verdict, labels) = written(path, false);
            verdict_with(verdict, labels)
        }
        ToolArgs::Run(_) => {
            let c = &grant.constraints;
            let bound = c.paths.iter().fold(Labels::NONE, |l, p| {
                l.join(read_back(&place_labels(snapshot, p, true)))
            });
            match &c.workdir {
                Some(w) => {
                    let (verdict, labels) = written(w, true);
                    verdict_with(verdict, labels.join(bound))
                }
                None => Judged::Stands(bound),
            }
        }
        _ => Judged::Stands(Labels::NONE),
    }
}

fn verdict_with(verdict: Verdict, labels: Labels) -> Judged {
    match verdict {
        Verdict::Stands => Judged::Stands(labels),
        Verdict::Ask => Judged::Ask(labels),
        Verdict::Refused(why) => Judged::Refused(why),
    }
}
