//! The one line a flow is reported as: what a hijacked model can do, and what stops it.

use proto::{DataClass, JobName};

use grants::Snapshot;

use super::source::Source;
use crate::policy::SessionView;

/// "a hijacked model" in an ordinary session, or in a job's runs.
fn who(job: Option<&JobName>) -> String {
    match job {
        None => "a hijacked model".to_owned(),
        Some(j) => format!("a hijacked model in job {j}'s runs"),
    }
}

/// "grant ID", with its expiry when it has one: the flow lasts until then.
fn grant(snapshot: &Snapshot, id: &str) -> String {
    match snapshot.get(id).and_then(|g| g.expires) {
        Some(at) => format!("grant {id} (until {at})"),
        None => format!("grant {id}"),
    }
}

/// The `max_taint` on `sink` that stops a source of `class`: the class under it. Under the
/// label every session starts at, that turns the grant off (brokerd never applies it), and
/// the line says so rather than offer it as a setting that keeps the grant.
fn below(class: DataClass, sink: &str) -> String {
    let under = match class {
        DataClass::Secret => DataClass::Private,
        DataClass::Private | DataClass::Public => DataClass::Public,
    };
    let start = SessionView::START.taint;
    if under < start {
        format!(
            "set max_taint = \"{}\" on {sink} (which turns it off: every session is {} from \
             its start)",
            under.as_str(),
            start.as_str()
        )
    } else {
        format!("set max_taint = \"{}\" on {sink}", under.as_str())
    }
}

/// What the model reads, with the label it leaves the session at.
fn source(snapshot: &Snapshot, s: &Source) -> String {
    let label = if s.labels.untrusted {
        format!("{}, untrusted", s.labels.class.as_str())
    } else {
        s.labels.class.as_str().to_owned()
    };
    format!(
        "{} ({label}) via {}",
        s.role.reads,
        grant(snapshot, &s.grant)
    )
}

/// A flow inside one call: the grant's own unit reads the source's places and reaches its
/// hosts, so nothing between the read and the send can stop it but the grant itself.
pub(super) fn in_one_call(snapshot: &Snapshot, job: Option<&JobName>, s: &Source) -> String {
    format!(
        "{} can {} and send it to {} in the same call, without asking you: drop the paths \
         or the hosts of {}, or set mode = \"ask\" on it",
        who(job),
        source(snapshot, s),
        s.role.what,
        grant(snapshot, &s.grant),
    )
}

/// A flow to a grant's sink: stopped by a lower `max_taint` on the sink, by asking, and,
/// when the source is untrusted, by the sink's `if_untrusted`.
pub(super) fn to_grant(
    snapshot: &Snapshot,
    job: Option<&JobName>,
    s: &Source,
    sends: &str,
    sink: &str,
) -> String {
    let untrusted = if s.labels.untrusted {
        ", or if_untrusted = \"ask\""
    } else {
        ""
    };
    format!(
        "{} can {} and {sends} via {}, without asking you: {}, or mode = \"ask\"{untrusted}",
        who(job),
        source(snapshot, s),
        grant(snapshot, sink),
        below(s.labels.class, sink),
    )
}

/// A flow to a job's delivery on Mattermost: the configuration allows it, so the fix is the
/// delivery or the source's grant.
pub(super) fn to_delivery(snapshot: &Snapshot, job: &JobName, s: &Source) -> String {
    format!(
        "{} can {} and post it to Mattermost as the run's result, without asking you: \
         deliver = \"note:{job}\" keeps the result in the box, or set mode = \"ask\" on {}",
        who(Some(job)),
        source(snapshot, s),
        s.grant,
    )
}

/// Untrusted content driving a write of yours: stopped by asking, by the write grant's
/// `if_untrusted`, or by `untrusted = false` on a grant that reads the place back (then only
/// you write there, docs/decisions.md H9).
pub(super) fn to_write(
    snapshot: &Snapshot,
    job: Option<&JobName>,
    s: &Source,
    writes: &str,
    sink: &str,
) -> String {
    format!(
        "{} can {} and, steered by what it read, {writes} via {}, without asking you: set \
         if_untrusted = \"ask\" on {sink}, or mode = \"ask\", or untrusted = false on a \
         grant that reads it (only you write there then)",
        who(job),
        source(snapshot, s),
        grant(snapshot, sink),
    )
}
