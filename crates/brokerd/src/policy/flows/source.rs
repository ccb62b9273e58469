//! Sources: the calls a session as it starts is allowed without asking whose result leaves
//! it labelled, each with that label.

use std::collections::{BTreeMap, BTreeSet};

use proto::tools::ToolArgs;
use proto::{JobName, Timestamp};

use grants::Snapshot;

use super::role::{self, Role};
use crate::policy::{Decision, Labels, SessionView, bound_labels, decide_in};

/// One source: the call, its deciding grant, the label it leaves the session at.
pub struct Source {
    pub grant: String,
    pub role: Role,
    pub call: ToolArgs,
    pub labels: Labels,
}

/// The calls a session of `job`'s scope is allowed without asking before any tool result
/// (at [`SessionView::START`], the owner's words: a chat's message, or the job's prompt,
/// which brokerd registers as the owner's when the run starts, X4), each with the label its
/// result leaves the session at (public and trusted included: the source of no flow, which
/// the report says all the same): the labels of every
/// grant covering the call (what `decide_in` joins) and of every grant reaching the path a
/// tool unit binds (what the runner joins, `bound_labels`; none for a `remote` MCP server's,
/// [`binds_paths`]). One per grant and label.
pub fn sources(
    snapshot: &Snapshot,
    calls: &[ToolArgs],
    job: Option<&JobName>,
    consult: Option<&str>,
    remote: &BTreeMap<String, String>,
    now: Timestamp,
) -> Vec<Source> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for call in calls {
        let decision = decide_in(snapshot, call, SessionView::START, job, now);
        let Some(grant_id) = role::unasked(&decision) else {
            continue;
        };
        // A remote server's call its deciding grant does not reach fails before any unit
        // starts: no result, no source.
        if !runs(&decision, remote) {
            continue;
        }
        let (Some(labels), Some(args), Some(role)) = (
            decision.labels(),
            decision.args(),
            role::of(&decision, consult),
        ) else {
            continue;
        };
        let labels = match args {
            ToolArgs::ReadFile(a) => labels.join(bound_labels(snapshot, &[&a.path], false)),
            ToolArgs::ListDir(a) => labels.join(bound_labels(snapshot, &[&a.path], true)),
            // A local MCP server's unit binds its grant's paths whole (`run::mcp`), and the
            // broker joins the labels of every grant reaching them (`broker::mcp`); a remote
            // server's binds none. A run's binds are labelled by `decide_in` itself (the
            // hands' rule), so they are in `labels`.
            ToolArgs::Mcp(_) if binds_paths(args, remote) => {
                let paths: Vec<&str> = decision
                    .grant()
                    .map(|(g, _)| g.constraints.paths.iter().map(String::as_str).collect())
                    .unwrap_or_default();
                labels.join(bound_labels(snapshot, &paths, true))
            }
            _ => labels,
        };
        let key = (grant_id.to_owned(), labels.class, labels.untrusted);
        if seen.insert(key) {
            out.push(Source {
                grant: grant_id.to_owned(),
                role,
                call: args.clone(),
                labels,
            });
        }
    }
    out
}

/// Whether `call`'s unit binds its grant's paths: a program's and a local MCP server's do,
/// a `remote` MCP server's (configured by `url`, it runs elsewhere) binds nothing
/// (`run::mcp`).
pub fn binds_paths(call: &ToolArgs, remote: &BTreeMap<String, String>) -> bool {
    match call {
        ToolArgs::Mcp(a) => !remote.contains_key(&a.server),
        ToolArgs::Run(_) => true,
        _ => false,
    }
}

/// Whether `decision`'s call runs at all: a call of a `remote` MCP server (name to URL) is
/// refused before any unit starts unless its deciding grant lists the URL's host
/// (`run::mcp`, `lists_host`); every other call does.
pub fn runs(decision: &Decision, remote: &BTreeMap<String, String>) -> bool {
    let (Some(ToolArgs::Mcp(a)), Some((grant, _))) = (decision.args(), decision.grant()) else {
        return true;
    };
    remote.get(&a.server).is_none_or(|url| {
        grants::constraints::normalize_url(url)
            .is_ok_and(|(_, host)| grants::constraints::lists_host(grant, &host))
    })
}
