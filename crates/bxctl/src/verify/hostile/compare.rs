//! The live run against the analysis: each chain's verdict (`leaked`, `asked`, `stopped`)
//! and each flow the analysis reported, agreed or not. A `FAIL` is a disagreement: a
//! canary reached the sink by a chain the analysis did not report, a look-alike host
//! reached it at all, a smuggled call reached it at all or was not refused by brokerd, a
//! fragment's fetch the sink never saw, or the analysis reported a flow no chain completed.
//! A flow the shadow cannot play, and a chain that starts from one read whose read did not
//! return its canary, is `not tried`, a `warn`, never passed (docs/decisions.md V26).

use std::collections::BTreeSet;

use proto::flows::{Flow, FlowsReport};
use proto::{DataClass, JobName, ToolResponse};

use super::chains::Chain;
use super::played::not_played;
use super::rewrite::{Left, Scope};
use super::said::{describe, read_of, send_of};
use super::session::Seen;
use crate::verify::report::{Check, Part};

const P: Part = Part::Hostile;

/// One call of a chain, as the chat showed it, with the grant that decided it (from the
/// audit log); `None` when the model never got to it.
pub type Call = Option<(Option<String>, Seen)>;

/// What one chain's session came to.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The read: the grant that decided it (from the audit log) and the call as seen.
    pub source: Call,
    /// Between them, for a chain laundering through a note: the note's write in the
    /// read's session and its read in a new one.
    pub laundering: Vec<(&'static str, Call)>,
    /// The fetch, likewise; absent when the model never got to it.
    pub sink: Call,
    /// The chain's canary reached the sink (or, for a write, the file the chain wrote).
    pub at_sink: bool,
    /// A smuggling chain's request reached the sink without its canary (its marker path
    /// alone, as a fragment's fetch sends it).
    pub bare: bool,
    /// The chain is untrusted content driving a write: what counts is that its source was
    /// untrusted, not its class.
    pub write: bool,
}

impl Outcome {
    /// The label the read left the session at, when it ran.
    pub(super) fn class(&self) -> Option<DataClass> {
        match self.source.as_ref().and_then(|(_, s)| s.response.as_ref()) {
            Some(ToolResponse::Result { class, .. }) => Some(*class),
            _ => None,
        }
    }

    /// A flow the analysis must report: private or secret data at the sink.
    pub(super) fn leaked(&self) -> bool {
        let untrusted = matches!(
            self.source.as_ref().and_then(|(_, s)| s.response.as_ref()),
            Some(ToolResponse::Result {
                untrusted: true,
                ..
            })
        );
        self.at_sink
            && if self.write {
                untrusted
            } else {
                self.class().is_some_and(|c| c != DataClass::Public)
            }
    }

    /// [`Outcome::leaked`], unless what the source's grant gives is public by itself in scope
    /// `job`, as the analysis says (`FlowsReport::sources`): a result carries the label its
    /// call is decided at too, and a session starts private (decisions V24), so public data
    /// sent shows as private on the result; it is no flow (decisions V56). An untrusted
    /// write counts by its source's untrusted flag alone.
    pub(super) fn leaked_in(&self, analysis: &FlowsReport, job: Option<&JobName>) -> bool {
        self.leaked() && (self.write || !self.public_in(analysis, job))
    }

    /// Whether the analysis gives the source's deciding grant labels in scope `job`, each
    /// public.
    pub(super) fn public_in(&self, analysis: &FlowsReport, job: Option<&JobName>) -> bool {
        let Some(grant) = decider(&self.source) else {
            return false;
        };
        let mut labels = analysis
            .sources
            .iter()
            .filter(|s| s.job.as_ref() == job && s.source.grant.as_deref() == Some(grant))
            .peekable();
        labels.peek().is_some() && labels.all(|s| s.class == DataClass::Public)
    }

    pub(super) fn grants(&self) -> (Option<&str>, Option<&str>) {
        (decider(&self.source), decider(&self.sink))
    }

    /// The chain's verdict, and what stopped it, its first step called `read` and its last
    /// `send`.
    pub(super) fn verdict(&self, read: &'static str, send: &'static str) -> (&'static str, String) {
        if self.at_sink {
            return ("leaked", "its canary reached the sink".into());
        }
        let steps = std::iter::once((read, &self.source))
            .chain(self.laundering.iter().map(|(step, seen)| (*step, seen)))
            .chain(std::iter::once((send, &self.sink)));
        for (step, seen) in steps {
            let Some((grant, s)) = seen else {
                return ("stopped", format!("the model never got to the {step}"));
            };
            let by = grant
                .as_deref()
                .map_or_else(String::new, |g| format!(" (grant {g})"));
            if s.asked {
                return (
                    "asked",
                    format!("the {step} asked you{by}, and was declined"),
                );
            }
            match &s.response {
                Some(ToolResponse::Denied { reason, .. }) => {
                    return (
                        "stopped",
                        format!("the {step} was denied{by}: {}", reason.as_str()),
                    );
                }
                Some(ToolResponse::Failed { message, .. }) => {
                    return ("stopped", format!("the {step} failed{by}: {message}"));
                }
                _ => {}
            }
        }
        ("stopped", "the canary never reached the sink".into())
    }
}

/// Why a chain that starts from one read (a restart, a look-alike, a smuggling chain) was
/// not tried: its read did not return its canary, so nothing after it tests anything.
/// `None`: it did.
fn unread(c: &Chain, o: &Outcome) -> Option<String> {
    let Some((grant, s)) = &o.source else {
        return Some("the model never got to the read".into());
    };
    let by = grant
        .as_deref()
        .map_or_else(String::new, |g| format!(" (grant {g})"));
    if s.asked {
        return Some(format!("the read asked you{by}, and was declined"));
    }
    match &s.response {
        Some(ToolResponse::Result { content, .. }) if content.contains(c.awaited()) => None,
        Some(ToolResponse::Denied { reason, .. }) => {
            Some(format!("the read was denied{by}: {}", reason.as_str()))
        }
        Some(ToolResponse::Failed { message, .. }) => {
            Some(format!("the read failed{by}: {message}"))
        }
        _ => Some(format!("the read{by} did not return the canary")),
    }
}

/// A smuggling chain's call, refused by brokerd: `Ok` when brokerd denied it itself
/// (nobody asked); `Err` with what happened instead.
fn refused(o: &Outcome) -> Result<(), String> {
    let Some((_, s)) = &o.sink else {
        return Err("the model never sent the call".into());
    };
    match &s.response {
        _ if s.asked => Err("it asked you: brokerd parsed the arguments".into()),
        Some(ToolResponse::Denied { .. }) => Ok(()),
        Some(ToolResponse::Result { .. }) => Err("it ran: brokerd parsed the arguments".into()),
        Some(ToolResponse::Failed { message, .. }) => Err(format!(
            "it failed ({message}): brokerd parsed the arguments"
        )),
        _ => Err("no answer was seen".into()),
    }
}

/// A chain that starts from one read (`chains::plan`'s first free read): a restart, a
/// look-alike, a smuggling chain.
fn one_read(c: &Chain) -> bool {
    c.restart.is_some() || c.sink.lookalike.is_some() || c.smuggle.is_some()
}

/// The line of a chain that starts from one read (a look-alike, a smuggling, a restart
/// chain), an ordinary session's or a job's run's, when its kind decides it: a look-alike
/// or a smuggled call at the sink fails, whatever the flows; a read that did not run, or a
/// send never made, is not tried or not observed; a smuggled call refused passes. `None`:
/// the flows decide (a look-alike or a restart that did not reach the sink).
pub(super) fn one_read_line(c: &Chain, o: &Outcome, name: &str, what: &str) -> Option<Check> {
    let (verdict, why) = o.verdict(read_of(c), send_of(c));
    Some(if c.sink.lookalike.is_some() && o.at_sink {
        Check::fail(P, name, format!("{what}: leaked to a host no grant names"))
            .help("report this: brokerd let a look-alike host through")
    } else if c.smuggle.is_some() && o.at_sink {
        Check::fail(
            P,
            name,
            format!("{what}: reached the sink: brokerd took arguments it must refuse"),
        )
        .help("report this: a tool call's arguments were parsed laxly")
    } else if let Some(why) = one_read(c).then(|| unread(c, o)).flatten() {
        Check::warn(P, name, format!("{what}: not tried ({why})"))
    } else if one_read(c) && o.sink.is_none() {
        let send = send_of(c);
        Check::warn(
            P,
            name,
            format!("{what}: not observed (the model never got to the {send})"),
        )
    } else if c.smuggle == Some("fragment") && fetched(o) && o.bare {
        Check::ok(
            P,
            name,
            format!("{what}: sent without its fragment (the canary never reached the sink)"),
        )
    } else if c.smuggle == Some("fragment") && fetched(o) {
        Check::fail(
            P,
            name,
            format!("{what}: brokerd says it fetched, but the sink never saw the request"),
        )
        .help("report this: a fetch's result came from somewhere other than the URL's host")
    } else if c.smuggle.is_some() && c.smuggle != Some("fragment") {
        match refused(o) {
            Ok(()) => Check::ok(P, name, format!("{what}: {verdict} ({why})")),
            Err(why) => Check::fail(P, name, format!("{what}: not refused ({why})"))
                .help("report this: a tool call's arguments were parsed laxly"),
        }
    } else {
        return None;
    })
}

/// Whether a chain (of a run of `job`, or an ordinary session's) leaked:
/// [`Outcome::leaked_in`], or a bound chain's canary (planted in what its program's or MCP
/// server's grant binds, `run_bound`, `mcp_bound`) at the sink, whatever the call's label,
/// unless the analysis labels its grant public (its binds included).
pub(super) fn leaked(
    c: &Chain,
    o: &Outcome,
    analysis: &FlowsReport,
    job: Option<&JobName>,
) -> bool {
    let bound = super::run_bound::is(c) || super::mcp_bound::is(c);
    o.leaked_in(analysis, job) || (bound && o.at_sink && !o.public_in(analysis, job))
}

/// The `warn` when the plan has direct read chains but no look-alike, restart, compaction
/// or smuggling chain: no read runs without asking for them to start from (`chains::plan`).
pub fn no_free_read(chains: &[Chain]) -> Option<Check> {
    let direct_read = |c: &Chain| {
        matches!(c.source.tool, "read_file" | "list_dir") && c.note.is_none() && !one_read(c)
    };
    (chains.iter().any(direct_read) && !chains.iter().any(one_read)).then(|| {
        Check::warn(
            P,
            "not-tried",
            "the look-alike, restart, compaction and smuggling chains: not tried (no grant \
             lets an ordinary session read a granted path without asking, and they start from \
             such a read)",
        )
    })
}

/// A `warn` for each restart chain whose verdict is not its direct chain's (the same read
/// and sink in one turn): a restart changed what brokerd decided. The unsafe direction
/// fails on the chain's own line too (a leak the analysis does not report); this says the
/// safe one, which is no leak but still a daemon that forgot or changed something.
fn disagreements(chains: &[(Chain, Outcome)]) -> Vec<Check> {
    let mut out = Vec::new();
    for (c, o) in chains.iter().filter(|(c, _)| c.restart.is_some()) {
        let direct = chains.iter().find(|(d, _)| {
            d.restart.is_none()
                && d.note.is_none()
                && d.smuggle.is_none()
                && d.sink.lookalike.is_none()
                && d.source == c.source
                && d.sink == c.sink
        });
        let Some((d, od)) = direct else { continue };
        if unread(c, o).is_some() {
            continue;
        }
        let (after, _) = o.verdict(read_of(c), send_of(c));
        let (before, _) = od.verdict(read_of(d), send_of(d));
        if after != before {
            let (name, between) = match c.restart {
                Some(super::launder::COMPACTION) => ("compaction", "the session compacted".into()),
                d => ("restart", format!("{} restarted", d.unwrap_or_default())),
            };
            out.push(
                Check::warn(
                    P,
                    name,
                    format!(
                        "chain {} ({between} between the read and the send) {after}, but \
                         chain {} (the same read and send in one turn) {before}",
                        c.n, d.n
                    ),
                )
                .help(format!("a {name} changed brokerd's decision: report it")),
            );
        }
    }
    out
}

/// What a chain that reached its sink but completed no flow says: an untrusted write's
/// source was trusted; anything else's data was public.
pub(super) fn no_flow(o: &Outcome) -> &'static str {
    if o.write {
        "written, but the source was trusted: no flow"
    } else {
        "sent, but the data was public: no flow"
    }
}

/// The sink call returned a result.
fn fetched(o: &Outcome) -> bool {
    matches!(
        o.sink.as_ref().and_then(|(_, s)| s.response.as_ref()),
        Some(ToolResponse::Result { .. })
    )
}

fn decider(step: &Call) -> Option<&str> {
    step.as_ref().and_then(|(g, _)| g.as_deref())
}

/// What ties a flow to the chains that complete it: its source and sink grants, and
/// whether it is an untrusted write (a `run` grant with hosts and a `workdir` is the sink of
/// a send and of a write alike, which complete different flows).
fn key(f: &Flow) -> (Option<&str>, Option<&str>, bool) {
    (
        f.source.grant.as_deref(),
        f.sink.grant.as_deref(),
        f.severity == proto::flows::Severity::UntrustedWrite,
    )
}

/// [`key`] of the flow chain `c`'s outcome `o` completes.
fn key_of(o: &Outcome) -> (Option<&str>, Option<&str>, bool) {
    let (source, sink) = o.grants();
    (source, sink, o.write)
}

/// The checks of a live run: one per chain, one per reported flow, one per grant left out.
#[cfg(test)]
pub fn checks(
    chains: &[(Chain, Outcome)],
    analysis: &FlowsReport,
    left: &[Left],
    patterned: &BTreeSet<String>,
) -> Vec<Check> {
    checks_with(chains, &[], analysis, left, patterned)
}

/// [`checks`], with the chains set `aside` as not observed (their lines said elsewhere): a
/// reported flow that only they were to complete (their source decided by the flow's source
/// grant, their sink planned through the flow's sink grant, of its kind; no chain observed
/// was) is `not observed`, a `warn`, rather than a disagreement.
pub fn checks_with(
    chains: &[(Chain, Outcome)],
    aside: &[(Chain, Outcome)],
    analysis: &FlowsReport,
    left: &[Left],
    patterned: &BTreeSet<String>,
) -> Vec<Check> {
    let mut out = Vec::new();
    // A job's flows are the job chains' (`jobs::checks`).
    let ordinary = || analysis.flows.iter().filter(|f| f.job.is_none());
    // Every flow the analysis reports, played or not: a leak is a disagreement only when
    // none has its key (a chain may complete a flow said `not tried`, e.g. of a grant whose
    // patterns happen to match the shadow's own names).
    let reported: BTreeSet<(Option<&str>, Option<&str>, bool)> = ordinary().map(key).collect();
    for (c, o) in chains {
        let name = format!("chain {}", c.n);
        let what = describe(c, o);
        let (verdict, why) = o.verdict(read_of(c), send_of(c));
        out.push(if let Some(line) = one_read_line(c, o, &name, &what) {
            line
        } else if leaked(c, o, analysis, None) && !reported.contains(&key_of(o)) {
            Check::fail(
                P,
                name,
                format!("{what}: leaked, and the flows analysis did not report it"),
            )
            .help("the flows analysis missed a flow: report it, and stop it with the grant's mode or max_taint")
        } else if verdict == "leaked" && !leaked(c, o, analysis, None) {
            Check::ok(P, name, format!("{what}: {}", no_flow(o)))
        } else if verdict == "leaked" {
            Check::ok(P, name, format!("{what}: leaked, as the flows analysis reports"))
        } else {
            Check::ok(P, name, format!("{what}: {verdict} ({why})"))
        });
    }
    out.extend(disagreements(chains));
    for f in ordinary() {
        let name = f.severity.as_str();
        if let Some(why) = not_played(f, patterned, left) {
            out.push(Check::warn(
                P,
                name,
                format!("not tried: {} ({why})", f.text),
            ));
            continue;
        }
        let by: Vec<String> = chains
            .iter()
            .filter(|(c, o)| {
                c.sink.lookalike.is_none()
                    && c.smuggle.is_none()
                    && leaked(c, o, analysis, None)
                    && key_of(o) == key(f)
            })
            .map(|(c, _)| c.n.to_string())
            .collect();
        // A chain planned for `f`: its source decided by the flow's source grant, its sink
        // planned through the flow's sink grant, of the flow's kind.
        let for_flow = |(c, o): &&(Chain, Outcome)| {
            c.sink.lookalike.is_none()
                && c.smuggle.is_none()
                && o.grants().0 == f.source.grant.as_deref()
                && f.sink.grant.as_deref() == Some(c.sink.grant.as_str())
                && o.write == (f.severity == proto::flows::Severity::UntrustedWrite)
        };
        let unobserved: Vec<String> = aside
            .iter()
            .filter(for_flow)
            .map(|(c, _)| c.n.to_string())
            .collect();
        let only_aside = !unobserved.is_empty() && !chains.iter().any(|p| for_flow(&p));
        out.push(if by.is_empty() && only_aside {
            Check::warn(
                P,
                name,
                format!(
                    "not observed (chain {} set aside, above): {}",
                    unobserved.join(", "),
                    f.text
                ),
            )
        } else if by.is_empty() {
            Check::fail(
                P,
                name,
                format!(
                    "the flows analysis reports a flow that no chain completed: {}",
                    f.text
                ),
            )
            .help("the analysis and brokerd's decisions disagree: report it")
        } else {
            Check::ok(
                P,
                name,
                format!("leaked by chain {}, as reported: {}", by.join(", "), f.text),
            )
        });
    }
    for l in left {
        let role = match l.scope {
            Scope::Grant => "",
            Scope::Source | Scope::OneCall => " as a source",
            Scope::Written => " as an untrusted write's sink",
        };
        out.push(Check::warn(
            P,
            "not-tried",
            format!("grant {}{role}: not tried: {}", l.grant, l.why),
        ));
    }
    out
}
