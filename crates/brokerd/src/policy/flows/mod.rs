//! Flows: what the grants let a hostile model do without asking (issue 27 point 2,
//! docs/verify.md, docs/decisions.md V12-V17, V24).
//!
//! A flow is a *source*, a call whose result leaves the session private, secret or
//! untrusted, followed by a *sink*, a call that carries data out of the session, each
//! allowed with no approval. Both are judged by [`decide_in`], the function brokerd decides
//! every call with: the source at the label every session starts at, a chat's and a job
//! run's alike ([`SessionView::START`]: private and trusted, the owner's words are in it;
//! the value brokerd starts each session's state at), the sink at that label raised by the
//! source's, in the same scope (an ordinary session, or one job's runs). So a grant with
//! `max_taint = "public"` is no step of any flow: brokerd never applies it. Only an allow
//! without asking counts; an `ask`, a denial, a taint above `max_taint`, an `if_untrusted`
//! mode, an expired grant or a grant of another scope stops the flow exactly as it would
//! stop the model. The model is taken as hostile from its
//! first turn (a backdoored model, a pasted text): the session is untrusted only when the
//! source made it so.
//!
//! The calls tried are built from the grants' own constraints (`calls`); what each tool is
//! to a flow is an exhaustive match (`role`), so a new tool is classified before it builds.

mod calls;
mod role;
mod source;
mod text;

use std::collections::{BTreeMap, BTreeSet};

use proto::flows::{Flow, Severity, SourceLabel, Step};
use proto::{DataClass, JobName, Timestamp};

use grants::Snapshot;

pub use calls::UnknownTool;

use super::{Labels, SessionView, bound_labels, decide_in};
use role::Sink;
use source::{Source, sources};

/// What the analysis needs of the configuration.
#[derive(Debug, Clone, Default)]
pub struct Setting {
    /// Each job, and whether its delivery leaves the box (Mattermost: yes; a note: no, it
    /// takes the run's label).
    pub jobs: Vec<(JobName, bool)>,
    /// The host of `broker.consult.url`, when one is configured.
    pub consult: Option<String>,
    /// The MCP servers configured by `url` (remote), each name to its URL: their units bind
    /// none of a grant's paths (`run::mcp`), so a call of one neither reads them nor is
    /// labelled by them, and a call whose deciding grant does not list the URL's host runs
    /// nothing.
    pub remote: BTreeMap<String, String>,
}

impl Setting {
    pub fn of(config: &config::Config) -> Self {
        Self {
            jobs: config
                .jobs
                .iter()
                .map(|j| {
                    let out = match &j.deliver {
                        config::Deliver::Mattermost => true,
                        config::Deliver::Note(_) => false,
                    };
                    (j.name.clone(), out)
                })
                .collect(),
            consult: config.broker.consult.as_ref().map(|c| {
                grants::constraints::normalize_url(&c.url)
                    .map_or_else(|_| c.url.clone(), |(_, host)| host.to_string())
            }),
            remote: config
                .mcp
                .iter()
                .filter_map(|s| Some((s.name.clone(), s.url.clone()?)))
                .collect(),
        }
    }
}

/// Every flow of `snapshot` at `now`, most severe first.
pub fn analyse(
    snapshot: &Snapshot,
    setting: &Setting,
    now: Timestamp,
) -> Result<Vec<Flow>, UnknownTool> {
    analysed(snapshot, setting, now).map(|(flows, _)| flows)
}

/// [`analyse`], and every source of every scope with its label.
fn analysed(
    snapshot: &Snapshot,
    setting: &Setting,
    now: Timestamp,
) -> Result<(Vec<Flow>, Vec<SourceLabel>), UnknownTool> {
    let calls = calls::candidates(snapshot)?;
    let mut scopes: Vec<(Option<&JobName>, bool)> = vec![(None, false)];
    scopes.extend(setting.jobs.iter().map(|(j, out)| (Some(j), *out)));
    let mut flows = Vec::new();
    let mut labels = Vec::new();
    for (job, delivers_out) in scopes {
        let consult = setting.consult.as_deref();
        for source in sources(snapshot, &calls, job, consult, &setting.remote, now) {
            labels.push(SourceLabel {
                job: job.cloned(),
                source: step_of(&source),
                class: source.labels.class,
                untrusted: source.labels.untrusted,
            });
            // Public and trusted: the source of no flow, said in the report all the same.
            if source.labels == Labels::NONE {
                continue;
            }
            // Public data going out is no leak; untrusted content driving a write is a flow
            // whatever its class.
            let out = match source.labels.class {
                DataClass::Secret => Some(Severity::SecretOut),
                DataClass::Private => Some(Severity::PrivateOut),
                DataClass::Public => None,
            };
            // A call that reads and sends at once (a program or an MCP server whose grant
            // binds paths and lists hosts): its own unit can carry what it read out, whatever
            // any max_taint says, since the one call is decided before it read anything. The
            // class is what its binds bring (`bound_labels`, as the broker labels them, its
            // own grant included); a grant that binds nothing is no such flow, nor is a
            // remote MCP server's, which runs elsewhere and is bound nothing.
            if let Some(severity) = in_one_call(snapshot, &source, &setting.remote) {
                let own = step_of(&source);
                let text = text::in_one_call(snapshot, job, &source);
                flows.push(flow(severity, job, &source, own, text));
            }
            let view = SessionView::START.raised(source.labels);
            let mut seen = BTreeSet::new();
            for call in &calls {
                let decision = decide_in(snapshot, call, view, job, now);
                let Some(grant_id) = role::unasked(&decision) else {
                    continue;
                };
                // A remote server's call its deciding grant does not reach runs nothing.
                if !source::runs(&decision, &setting.remote) {
                    continue;
                }
                let Some(role) = role::of(&decision, consult) else {
                    continue;
                };
                // The source's own call again is a sink only as a write its untrusted result
                // drives: a write's result is untrusted where the place it reads back is
                // (decision H9), and the model can write there once more (another file of
                // the same grant's, V54). It is left out of `seen`, so that another call of
                // the grant is still a sink of every kind.
                let again = *call == source.call;
                if again && !(source.labels.untrusted && role.writes) {
                    continue;
                }
                if !again && !seen.insert((grant_id.to_owned(), role.what.clone())) {
                    continue;
                }
                let sink_step = || Step {
                    grant: Some(grant_id.to_owned()),
                    tool: call.tool().to_owned(),
                    what: role.what.clone(),
                };
                if let (Some(severity), Some(sink), false) = (out, &role.sink, again) {
                    let sends = role::sends(sink, &role.what);
                    let text = text::to_grant(snapshot, job, &source, &sends, grant_id);
                    flows.push(flow(severity, job, &source, sink_step(), text));
                }
                if source.labels.untrusted && role.writes {
                    let text = text::to_write(snapshot, job, &source, &role.reads, grant_id);
                    let severity = Severity::UntrustedWrite;
                    flows.push(flow(severity, job, &source, sink_step(), text));
                }
            }
            if let (true, Some(job), Some(severity)) = (delivers_out, job, out) {
                let sink = Step {
                    grant: None,
                    tool: "deliver".into(),
                    what: "mattermost".into(),
                };
                let text = text::to_delivery(snapshot, job, &source);
                flows.push(flow(severity, Some(job), &source, sink, text));
            }
        }
    }
    flows.sort_by(|a, b| key(a).cmp(&key(b)));
    flows.dedup_by(|a, b| key(a) == key(b));
    Ok((flows, labels))
}

/// What orders the flows and makes two of them the same flow.
fn key(
    f: &Flow,
) -> (
    Severity,
    &Option<JobName>,
    &Option<String>,
    &Option<String>,
    &str,
) {
    (
        f.severity,
        &f.job,
        &f.source.grant,
        &f.sink.grant,
        &f.sink.what,
    )
}

/// The severity of what a reading-and-sending call ([`Sink::Run`], [`Sink::Mcp`]) can carry
/// out of its own binds: `None` for any other call, or binds no grant labels above public.
fn in_one_call(
    snapshot: &Snapshot,
    source: &Source,
    remote: &BTreeMap<String, String>,
) -> Option<Severity> {
    if !matches!(source.role.sink, Some(Sink::Run | Sink::Mcp))
        || !source::binds_paths(&source.call, remote)
    {
        return None;
    }
    let c = &snapshot.get(&source.grant)?.constraints;
    let places: Vec<&str> = c
        .paths
        .iter()
        .chain(&c.workdir)
        .map(String::as_str)
        .collect();
    if places.is_empty() {
        return None;
    }
    match bound_labels(snapshot, &places, true).class {
        DataClass::Secret => Some(Severity::SecretOut),
        DataClass::Private => Some(Severity::PrivateOut),
        DataClass::Public => None,
    }
}

/// A source's call as a flow names it.
fn step_of(s: &Source) -> Step {
    Step {
        grant: Some(s.grant.clone()),
        tool: s.call.tool().to_owned(),
        what: s.role.what.clone(),
    }
}

fn flow(severity: Severity, job: Option<&JobName>, s: &Source, sink: Step, text: String) -> Flow {
    Flow {
        severity,
        job: job.cloned(),
        source: step_of(s),
        class: s.labels.class,
        untrusted: s.labels.untrusted,
        sink,
        text,
    }
}

/// The report brokerd answers `flows_query` with and `brokerd --flows --json` prints.
pub fn report(
    snapshot: &Snapshot,
    setting: &Setting,
    now: Timestamp,
) -> Result<proto::flows::FlowsReport, UnknownTool> {
    let (flows, sources) = analysed(snapshot, setting, now)?;
    Ok(proto::flows::FlowsReport {
        snapshot: snapshot.hash(),
        grants: snapshot.ids(),
        flows,
        sources,
    })
}

/// `brokerd --flows` without `--json`: each flow on a line after its severity, then a
/// summary line.
pub fn text(report: &proto::flows::FlowsReport) -> String {
    let mut out = String::new();
    for f in &report.flows {
        out.push_str(&format!("{:<15} {}\n", f.severity.as_str(), f.text));
    }
    let count = |s: Severity| report.flows.iter().filter(|f| f.severity == s).count();
    out.push_str(&format!(
        "flows: {} secret_out, {} private_out, {} untrusted_write from {} grant(s), snapshot \
         {}\n",
        count(Severity::SecretOut),
        count(Severity::PrivateOut),
        count(Severity::UntrustedWrite),
        report.grants.len(),
        report.snapshot
    ));
    out
}
