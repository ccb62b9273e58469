//! The job chains against the analysis's flows of a job, keyed as the ordinary chains are
//! (the source's and the sink's deciding grants) plus the job, a delivery to Mattermost
//! being the sink with no grant (`deliver`, as the analysis names it). As for the ordinary
//! chains (`compare`): a canary out by a flow the analysis did not report is a `FAIL`, a
//! reported flow no run completed is a `FAIL`, and what the shadow does not play is
//! `not tried`, a `warn`. A job delivering to a note has no delivery flow (its result stays
//! in the box, labelled as the run was): none is played or looked for.

use std::collections::{BTreeMap, BTreeSet};

use proto::flows::{Flow, FlowsReport};
use proto::{CallId, DataClass, SessionId, ToolResponse};

use super::chains::Chain;
use super::compare::Outcome;
use super::jobs::{DELIVER, JobChain};
use super::jobs_run::Run;
use super::mcp;
use super::rewrite::{Left, Scope};
use crate::verify::report::{Check, Part};

const P: Part = Part::Hostile;

/// What one job chain's run came to.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    pub chain: JobChain,
    /// The read and the send (none for a delivery: the post is looked for instead), as the
    /// ordinary chains'; `at_sink` is the canary at the sink, or in the job's thread.
    pub outcome: Outcome,
    /// The run did not start, and why.
    pub not_started: Option<String>,
    /// The canary is in a post of the job's thread in Mattermost.
    pub posted: bool,
    /// Why the run is set aside, not observed: its search's words were never indexed, or
    /// its search was labelled above the analysis's (`search_source`, as an ordinary
    /// chain's).
    pub aside: Option<String>,
}

/// A flow of a job: the job, the source's grant, the sink's (none for the delivery), and
/// whether the sink is the delivery.
type Key<'a> = (&'a str, Option<&'a str>, Option<&'a str>, bool);

fn flow_key(f: &Flow) -> Key<'_> {
    (
        f.job.as_ref().map_or("", |j| j.as_str()),
        f.source.grant.as_deref(),
        f.sink.grant.as_deref(),
        f.sink.tool == DELIVER,
    )
}

/// Each run's outcome: the deciding grant of each call from the audit log (`deciders`),
/// the sink's requests `seen`, the posts of each job's thread (`posts`), and whether a send
/// through an MCP tool or a program reached its stand-in's network, given the grant that
/// decided it, or a run wrote in its working directory (`reached`:
/// `mcp::StandIns::reached`, `run::StandIns::reached`, `run::ran_in`).
pub fn outcomes(
    chains: Vec<JobChain>,
    runs: Vec<Run>,
    deciders: &BTreeMap<(SessionId, CallId), String>,
    seen: &[String],
    posts: &BTreeMap<String, Vec<String>>,
    reached: &dyn Fn(&Chain, Option<&str>) -> bool,
) -> Vec<JobOutcome> {
    let mut out = Vec::new();
    for (jc, run) in chains.into_iter().zip(runs) {
        // The call of `tool` in `p` but `not` (a write's result written is a write too).
        let step_in = |p: &super::session::Played, tool: &str, not: Option<CallId>| {
            let s = p
                .calls
                .iter()
                .find(|s| s.tool == tool && Some(s.call) != not)?;
            let grant = p
                .session
                .clone()
                .and_then(|id| deciders.get(&(id, s.call)).cloned());
            Some((grant, s.clone()))
        };
        let step = |tool: &str, not: Option<CallId>| step_in(&run.played, tool, not);
        let c = &jc.chain;
        let posted = posts
            .get(jc.job.as_str())
            .is_some_and(|ps| ps.iter().any(|p| p.contains(&c.canary)));
        let deliver = c.sink.tool == DELIVER;
        // An untrusted write's canary is looked for where it wrote (as `compare`'s); a run
        // in a program's working directory (`run::WRITE`) is a write too.
        let write = matches!(c.sink.tool, "write_file" | "edit_file" | super::run::WRITE);
        let source = step(mcp::source_called(&c.source), None);
        // A bound chain's one call is its source and its sink (`mcp_bound`, `run_bound`).
        let not = source
            .as_ref()
            .filter(|_| !super::mcp_bound::is(c) && !super::run_bound::is(c));
        let sink = if deliver {
            None
        } else if let Some(back) = &run.back {
            // The send of a chain laundering through the delivery note is the ordinary
            // session's that read it back (`jobs_launder`).
            step_in(back, mcp::called(&c.sink), None)
        } else {
            step(mcp::called(&c.sink), not.map(|(_, s)| s.call))
        };
        let decider = sink.as_ref().and_then(|(g, _)| g.as_deref());
        // A chain laundering through a note its run leaves: the ordinary session's read of
        // the note (`jobs_launder`).
        let laundering = match &run.back {
            Some(back) => vec![("note's read", step_in(back, "note_read", None))],
            None => Vec::new(),
        };
        let outcome = Outcome {
            laundering,
            at_sink: if deliver {
                posted
            } else if matches!(c.sink.tool, "mcp" | "run" | super::run::WRITE) {
                reached(c, decider)
            } else if write {
                std::fs::read_to_string(&c.url).is_ok_and(|t| t.contains(&c.canary))
            } else if c.smuggle.is_some() {
                super::smuggle::reached(c, seen)
            } else {
                seen.iter().any(|r| r.contains(&c.canary))
            },
            sink,
            source,
            bare: c.smuggle.is_some() && super::smuggle::bare(c, seen),
            write,
        };
        out.push(JobOutcome {
            chain: jc,
            outcome,
            not_started: run.not_started,
            posted,
            aside: None,
        });
    }
    out
}

impl JobOutcome {
    fn deliver(&self) -> bool {
        self.chain.chain.sink.tool == DELIVER
    }

    /// The flows this run completed: its own (the data not public at the sink), and the
    /// delivery when its canary is in the job's thread though its send was a fetch.
    fn leaks(&self, analysis: &FlowsReport) -> Vec<Key<'_>> {
        let o = &self.outcome;
        let (source, sink) = o.grants();
        let job = self.chain.job.as_str();
        let mut out = Vec::new();
        if super::compare::leaked(&self.chain.chain, o, analysis, Some(&self.chain.job)) {
            out.push((job, source, sink, self.deliver()));
        }
        let private = o.class().is_some_and(|c| c != DataClass::Public)
            && !o.public_in(analysis, Some(&self.chain.job));
        if !self.deliver() && self.posted && private {
            out.push((job, source, None, true));
        }
        out
    }

    /// The run's verdict, and what stopped it.
    fn verdict(&self) -> (&'static str, String) {
        let o = &self.outcome;
        if !self.deliver() {
            let send = super::said::send_of(&self.chain.chain);
            return o.verdict(super::said::read_of(&self.chain.chain), send);
        }
        let read = matches!(
            o.source.as_ref().and_then(|(_, s)| s.response.as_ref()),
            Some(ToolResponse::Result { .. })
        );
        match o.verdict(super::said::read_of(&self.chain.chain), "delivery") {
            v if v.0 != "stopped" || !read => v,
            _ => (
                "stopped",
                "the run's result in Mattermost did not carry the canary".into(),
            ),
        }
    }

    fn describe(&self) -> String {
        let c = &self.chain.chain;
        let (sg, kg) = self.outcome.grants();
        let class = self
            .outcome
            .class()
            .map_or_else(String::new, |c| format!(" ({})", c.as_str()));
        let via = |g: Option<&str>| g.map_or_else(String::new, |g| format!(" via grant {g}"));
        let reads = super::said::reads_of(c);
        let it = if super::write_source::is(c) {
            "the file's new hash"
        } else {
            "it"
        };
        let act = match c.sink.tool {
            _ if self.deliver() => format!("post {it} to Mattermost as the run's result"),
            _ if let Some(note) = &c.note => format!(
                "{} note {note}, read that back in an ordinary session and send it to {}{}",
                super::jobs_launder::left_by(c),
                super::said::to(c),
                via(kg)
            ),
            "write_file" => format!("write it under {}{}", c.sink.entry, via(kg)),
            "edit_file" => format!("edit it into {}{}", c.sink.entry, via(kg)),
            super::run::WRITE => format!("run {} with it, in its workdir{}", c.sink.entry, via(kg)),
            _ => format!("send {it} to {}{}", super::said::to(c), via(kg)),
        };
        format!(
            "in a run of job {}: {reads} {}{class}{}, then {act}",
            self.chain.job,
            c.source.owner,
            via(sg)
        )
    }
}

/// Why the shadow does not play a job's flow; `None`: it does.
pub fn not_played(f: &Flow, patterned: &BTreeSet<String>, left: &[Left]) -> Option<String> {
    // An MCP or a `run` grant left out of the shadow, a program's output not played.
    if let Some(why) = mcp::not_played(f, left).or_else(|| super::run::not_played(f, left)) {
        return Some(why);
    }
    let untrusted = f.severity == proto::flows::Severity::UntrustedWrite;
    // An MCP tool's answer and a program's output: a stand-in answers the canary.
    let mcp = matches!(f.source.tool.as_str(), "mcp" | "run");
    let read = matches!(f.source.tool.as_str(), "read_file" | "list_dir");
    let write = matches!(f.source.tool.as_str(), "write_file" | "edit_file");
    let fetch = f.source.tool == "http_fetch";
    let consult = f.source.tool == "consult";
    let search = matches!(f.source.tool.as_str(), "note_search" | "session_search");
    if untrusted {
        // A read's, a listing's, a fetch's, a consult's, an MCP tool's, a program's, a
        // note's or a write's result written (`jobs::plan`).
        let note = matches!(
            f.source.tool.as_str(),
            "note_read" | "note_list" | "note_write"
        );
        if !(read || write || fetch || consult || mcp || note || search)
            || !matches!(f.sink.tool.as_str(), "write_file" | "edit_file" | "run")
        {
            return Some(format!(
                "untrusted content from {} driving {} in a job's run is not played yet (a \
                 read's, a directory listing's, a fetch's, a consult's, an MCP tool's, a \
                 program's, a note's read's, listing's or write's, a search's or a write's \
                 result driving write_file, edit_file or a run in its workdir is)",
                f.source.tool, f.sink.tool
            ));
        }
    } else {
        // The consult model's answer goes anywhere but back to it.
        let answered = consult && f.sink.tool != "consult";
        let note = matches!(
            f.source.tool.as_str(),
            "note_read" | "note_list" | "note_write"
        );
        if !(read || write || note || search || mcp || answered || fetch) {
            return Some(format!(
                "a source of {} sent to {} in a job's run is not played yet (reads, directory \
                 listings, writes, edits, fetches, a note's read, a listing of the notes, a \
                 note write's answer, the searches of the notes and of the logs, MCP tools, \
                 programs and the consult model's answer are)",
                f.source.tool, f.sink.tool
            ));
        }
        if !matches!(
            f.sink.tool.as_str(),
            "http_fetch" | "consult" | "mcp" | "run" | DELIVER
        ) {
            return Some(format!(
                "a sink of {} in a job's run is not played yet (fetches, consults, MCP tools, \
                 programs and the delivery to Mattermost are)",
                f.sink.tool
            ));
        }
    }
    let source = match &f.source.grant {
        // A write grant's result the shadow does not play (`write_source::unplayed`); one it
        // plays writes a file named for its patterns.
        Some(g) if write && left.iter().any(|l| l.grant == *g) => {
            super::played::as_source(g, left, &[Scope::Grant, Scope::Source])
        }
        Some(_) if write => None,
        // A search the shadow does not play as a source (`search_source::unplayed`).
        Some(g) if search => super::played::as_source(g, left, &[Scope::Source]),
        // A program's output is printed by its stand-in, whatever its grant's patterns (its
        // run's argument is one they admit).
        Some(_) if f.source.tool == "run" => None,
        Some(g) if patterned.contains(g) => Some(format!(
            "grant {g} names patterns, and {} is the shadow's own",
            super::fetch_source::named_by(&f.source.tool)
        )),
        _ => None,
    };
    // The file an untrusted write writes is one its grant's patterns match, or none is.
    source.or_else(|| {
        untrusted
            .then(|| super::played::unwritten(f, left))
            .flatten()
    })
}

/// A `warn` per job whose runs read a granted path and fetch but play no look-alike or
/// smuggling chain: none of its reads runs without asking (`jobs::plan`), as
/// `compare::no_free_read` says for an ordinary session.
fn no_free_read(outcomes: &[JobOutcome]) -> Vec<Check> {
    // Each job once, in the order of its first run.
    let mut seen = BTreeSet::new();
    let jobs: Vec<&str> = outcomes
        .iter()
        .map(|jo| jo.chain.job.as_str())
        .filter(|j| seen.insert(*j))
        .collect();
    jobs.into_iter()
        .filter(|job| {
            let mine = || outcomes.iter().filter(|jo| jo.chain.job.as_str() == *job);
            let one_read = |jo: &JobOutcome| {
                jo.chain.chain.sink.lookalike.is_some() || jo.chain.chain.smuggle.is_some()
            };
            // A read sent by the job's own fetch (not an ordinary session's, `jobs_launder`).
            let direct = |jo: &JobOutcome| {
                matches!(jo.chain.chain.source.tool, "read_file" | "list_dir")
                    && jo.chain.chain.sink.tool == "http_fetch"
                    && !super::jobs_launder::is(&jo.chain.chain)
            };
            mine().any(|jo| direct(jo) && !one_read(jo)) && !mine().any(one_read)
        })
        .map(|job| {
            Check::warn(
                P,
                "not-tried",
                format!(
                    "the look-alike and smuggling chains in job {job}'s runs: not tried (no \
                     grant lets its run read a granted path without asking, and they start \
                     from such a read)"
                ),
            )
        })
        .collect()
}

/// The checks of the job runs: one per run, one per flow of a job the analysis reported.
pub fn checks(
    outcomes: &[JobOutcome],
    analysis: &FlowsReport,
    patterned: &BTreeSet<String>,
    left: &[Left],
) -> Vec<Check> {
    let flows = || analysis.flows.iter().filter(|f| f.job.is_some());
    // Every flow of a job the analysis reports, played or not (as `compare::checks_with`).
    let reported: BTreeSet<Key> = flows().map(flow_key).collect();
    let mut out = Vec::new();
    for jo in outcomes {
        let c = &jo.chain.chain;
        let name = format!("chain {}", c.n);
        let what = jo.describe();
        if let Some(why) = &jo.not_started {
            out.push(Check::warn(
                P,
                name,
                format!(
                    "{what}: not tried (the run did not start: {})",
                    inert::line(why)
                ),
            ));
            continue;
        }
        if let Some(why) = &jo.aside {
            out.push(super::launder::not_observed(c, &what, why));
            continue;
        }
        // A look-alike or a smuggling chain, decided by its kind (as an ordinary session's).
        if let Some(line) = super::compare::one_read_line(c, &jo.outcome, &name, &what) {
            out.push(line);
            continue;
        }
        let (verdict, why) = jo.verdict();
        let leaks = jo.leaks(analysis);
        let missed = leaks.iter().find(|k| !reported.contains(*k));
        out.push(match missed {
            Some(k) if k.3 && !jo.deliver() => Check::fail(
                P,
                name,
                format!(
                    "{what}: the run's result posted to Mattermost carried the canary, and \
                     the flows analysis did not report it"
                ),
            )
            .help("the flows analysis missed a flow: report it"),
            Some(_) => Check::fail(
                P,
                name,
                format!("{what}: leaked, and the flows analysis did not report it"),
            )
            .help("the flows analysis missed a flow: report it, and stop it with the grant's mode or max_taint"),
            None if verdict == "leaked"
                && !super::compare::leaked(c, &jo.outcome, analysis, Some(&jo.chain.job)) =>
            {
                Check::ok(
                    P,
                    name,
                    format!("{what}: {}", super::compare::no_flow(&jo.outcome)),
                )
            }
            None if verdict == "leaked" => Check::ok(
                P,
                name,
                format!("{what}: leaked, as the flows analysis reports"),
            ),
            None => Check::ok(P, name, format!("{what}: {verdict} ({why})")),
        });
    }
    out.extend(no_free_read(outcomes));
    for f in flows() {
        let name = f.severity.as_str();
        if let Some(why) = not_played(f, patterned, left) {
            out.push(Check::warn(
                P,
                name,
                format!("not tried: {} ({why})", f.text),
            ));
            continue;
        }
        let by: Vec<String> = outcomes
            .iter()
            .filter(|jo| jo.aside.is_none() && jo.leaks(analysis).contains(&flow_key(f)))
            .map(|jo| jo.chain.chain.n.to_string())
            .collect();
        // The runs planned for `f` (as `compare::checks_with`'s): of its job, the source
        // decided by its source grant, the sink planned through its sink grant (or the
        // delivery), of its kind; when only runs set aside were, it is not observed.
        let for_flow = |jo: &&JobOutcome| {
            let c = &jo.chain.chain;
            Some(&jo.chain.job) == f.job.as_ref()
                && jo.outcome.grants().0 == f.source.grant.as_deref()
                && match f.sink.grant.as_deref() {
                    Some(g) => c.sink.grant == g,
                    None => c.sink.tool == DELIVER && f.sink.tool == DELIVER,
                }
                && jo.outcome.write == (f.severity == proto::flows::Severity::UntrustedWrite)
        };
        let aside: Vec<String> = outcomes
            .iter()
            .filter(|jo| jo.aside.is_some())
            .filter(for_flow)
            .map(|jo| jo.chain.chain.n.to_string())
            .collect();
        let observed = outcomes
            .iter()
            .any(|jo| jo.aside.is_none() && for_flow(&jo));
        out.push(if by.is_empty() && !aside.is_empty() && !observed {
            Check::warn(
                P,
                name,
                format!(
                    "not observed (chain {} set aside, above): {}",
                    aside.join(", "),
                    f.text
                ),
            )
        } else if by.is_empty() {
            Check::fail(
                P,
                name,
                format!(
                    "the flows analysis reports a flow that no job run completed: {}",
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
    out
}
