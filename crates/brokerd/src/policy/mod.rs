//! Decisions: whether a call runs, asks or is denied, and the labels a result takes.
//!
//! The one place a decision is made: a pure, deterministic function of the grant snapshot,
//! the validated request and the session's state (and the time, passed in). A new tool's
//! rules go here with its grant's: a write's no write down and untrusted write (`hands`), an
//! MCP tool's `constraints.args` (issue 26).
//!
//! [`Decision`] has a private field and implements neither `Clone` nor `Deserialize`, so
//! only this module can make one, and the runner takes it by value: a tool runs only on a
//! decision this module made, and each decision runs at most once. An allow carries the
//! arguments it authorises, and the runner runs nothing else; an `ask` becomes an allow only
//! with the approval desk's [`crate::ask::approved::Approved`], which no code outside `ask`
//! can make (the owner's answer to the card, or an allowance the owner gave for the
//! session: which calls an allowance covers is [`allowance`]'s rule).
//!
//! ```
//! // What the refusals below name exists, as they name it: each refusal fails to compile
//! // for its own reason (rustdoc on stable does not check the error code).
//! fn allow(
//!     asked: brokerd::policy::Decision,
//!     owner: brokerd::ask::approved::Approved,
//! ) -> brokerd::policy::Decision {
//!     brokerd::policy::approve(asked, owner)
//! }
//! fn who(owner: &brokerd::ask::approved::Approved) -> (&str, Option<&str>) {
//!     (owner.by(), owner.allowance())
//! }
//! fn what(d: &brokerd::policy::Decision) -> Option<&proto::tools::ToolArgs> {
//!     d.args()
//! }
//! ```
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
//! ```compile_fail,E0451
//! // Nor turned from an ask into an allow without the owner: only the approval desk makes
//! // an `Approved`, and its fields are private.
//! fn allow(asked: brokerd::policy::Decision) -> brokerd::policy::Decision {
//!     let token = brokerd::ask::approved::Approved {
//!         by: "loopd".into(),
//!         post: None,
//!         allowance: None,
//!     };
//!     brokerd::policy::approve(asked, token)
//! }
//! ```
//!
//! ```compile_fail,E0624
//! // Nor through its constructor, which is the desk's alone: not even by naming an
//! // allowance the owner gave.
//! fn allow(asked: brokerd::policy::Decision) -> brokerd::policy::Decision {
//!     let token = brokerd::ask::approved::Approved::new("loopd".into(), None, Some("x".into()));
//!     brokerd::policy::approve(asked, token)
//! }
//! ```
//!
//! ```compile_fail,E0599
//! // Nor is there a way to change what an allow authorises.
//! fn widen(d: &mut brokerd::policy::Decision, other: proto::tools::ToolArgs) {
//!     d.set_args(other);
//! }
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
//!   mismatch as the detail);
//! - a write (`write_file`, `edit_file`, a `run` with a `workdir`) the grants let through is
//!   then decided by the labels of where it will be read back (`hands`, docs/decisions.md
//!   H9): above the place's lowest class it is denied `write_down`, never asked; untrusted
//!   where a reaching grant says only the owner writes, `untrusted_write`, unless the
//!   deciding grant's `if_untrusted = "ask"` lets the owner approve it. The answer of a
//!   hands call is labelled like a read of what it wrote or bound.

pub mod allowance;
mod decision;
pub mod flows;
mod hands;
mod labels;
pub mod mcp;

use proto::tools::{
    EditFileArgs, HttpFetchArgs, ListDirArgs, ReadFileArgs, ToolArgs, WriteFileArgs,
};
use proto::{DenyReason, Grant, JobName, Mode, Timestamp};

use grants::Snapshot;
use grants::constraints::{self, Covered};

pub(crate) use decision::record;
pub use decision::{
    Approval, Decision, Outcome, approve, denied, failed, invalid, job_not_running, refuse,
    too_many_pending, unwitnessed, write_failed,
};
use decision::{Kind, deny};
use hands::Judged;
pub use labels::{Labels, SessionView};

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

/// The arguments as the grant covered them: the normalised path or URL. This is what the
/// approval binds to, the audit keeps as canonical, and the tool runs with (what an allow
/// authorises), so that what was checked is what runs.
pub fn effective(args: &ToolArgs, covered: &Covered) -> ToolArgs {
    match (args, &covered.path, &covered.url) {
        (ToolArgs::ReadFile(_), Some(path), _) => {
            ToolArgs::ReadFile(ReadFileArgs { path: path.clone() })
        }
        (ToolArgs::ListDir(_), Some(path), _) => {
            ToolArgs::ListDir(ListDirArgs { path: path.clone() })
        }
        (ToolArgs::HttpFetch(_), _, Some(url)) => ToolArgs::HttpFetch(HttpFetchArgs {
            url: url.as_str().to_owned(),
        }),
        (ToolArgs::WriteFile(a), Some(path), _) => ToolArgs::WriteFile(WriteFileArgs {
            path: path.clone(),
            ..a.clone()
        }),
        (ToolArgs::EditFile(a), Some(path), _) => ToolArgs::EditFile(EditFileArgs {
            path: path.clone(),
            ..a.clone()
        }),
        _ => args.clone(),
    }
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
    let tool = args.grant_tool();
    // The deciding grant so far: the strictest mode, then the smallest id (grants come in id
    // order, so the first of a mode stays), so the outcome never depends on directory order.
    let mut best: Option<(u8, &str, &Grant, Covered)> = None;
    let mut labels = Labels::NONE;
    let mut too_tainted: Option<&str> = None;
    let mut expired: Option<&str> = None;
    let mut mismatch: Option<String> = None;
    // Whether a grant that would ask says `always_ask` (the owner is asked every time).
    let mut always_ask = false;
    for (id, grant) in snapshot
        .iter()
        .filter(|(_, g)| constraints::for_call(g, args))
    {
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
        always_ask |= mode == Mode::Ask && grant.always_ask;
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
            let args = effective(args, &covered);
            // The hands' rules come after the mode and before asking (H9): a refusal is
            // never asked, and what they write or bind labels the answer.
            let (r, labels) = match hands::judge(snapshot, &args, grant, session) {
                Judged::Refused(why) => return deny(why.reason(), Some(id), why.to_string()),
                Judged::Ask(more) => (1, labels.join(more)),
                Judged::Stands(more) => (r, labels.join(more)),
            };
            let (grant_id, grant) = (id.to_owned(), grant.clone());
            Decision {
                kind: if r == 1 {
                    Kind::Ask {
                        grant_id,
                        grant,
                        covered,
                        labels,
                        args,
                        always_ask,
                    }
                } else {
                    Kind::Allow {
                        grant_id,
                        grant,
                        covered,
                        labels,
                        args,
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
