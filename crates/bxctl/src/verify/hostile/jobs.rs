//! The job chains: the owner's `[[jobs]]` in the shadow (`STATE/jobs.toml`, each prompt a tag
//! the hostile script keys on, docs/verify.md), and the runs the self-test starts of them.
//! A job's grants (`job = NAME`) decide only its runs (the ordinary grants' denials aside),
//! so each chain is one run of its job: a read one of the job's grants allows, then either a
//! fetch carrying the read's canary to a host of one of the job's fetch grants (or to the
//! consult model, led to the sink), or, for a job that delivers to Mattermost, the run's
//! answer carrying it, which the runner posts in the job's thread through gatewayd to the
//! shadow's fake Mattermost (`jobs_run`). A job delivering to a note keeps its result in
//! the box: the analysis reports no flow for it, and there is nothing to send (`jobs_check`).
//!
//! A job's note read and listing of the notes, its MCP tools and programs (sources, and
//! sinks when their grant lists hosts), a run in a program's working directory as a write,
//! and the look-alikes and argument smuggling from its first read that runs without asking
//! are played likewise (decisions V61), and so are its searches of the notes and the logs
//! (V62), its fetches labelled above public as sources (V63), a listing of the notes
//! driving its writes (V64), its tools' and programs' one call reading what their grant
//! binds and sending it (V65) and a note write's answer (V70).
//!
//! A job's prompt is one tag for all its runs, so its rules are played in order: each
//! chain's source rule answers once (each job's runs are started in plan order: its
//! searches first, then its listings of the notes, then the rest, `play::with_jobs`), its
//! sink rule once the source's result holds its canary, and every other tool result ends
//! the turn. What a source answers is what the shadow planted for it, never what a send
//! through the same tool gets back (`mcp::SOURCE`, `run::OUTPUT_KEY`).

use std::path::Path;

use config::{Deliver, Job};
use proto::{JobName, Mode};

use super::chains::{self, Chain, Source, Target};
use super::rewrite::{Rewritten, in_scope};
use super::untrusted_write::Planted;

/// A job chain's sink tool when the send is the run's delivery to Mattermost.
pub const DELIVER: &str = "deliver";

/// One run of a job: its chain (numbered after the ordinary chains).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobChain {
    pub job: JobName,
    pub chain: Chain,
}

/// What the job's prompt is in the shadow: the tag its rules key on.
pub fn tag(job: &JobName) -> String {
    format!("[bxhostile job {job}]")
}

/// The text a delivery chain's run answers with: its canary.
pub fn answer(canary: &str) -> String {
    format!("Here is what I read: {canary}")
}

/// Every job chain: for each job, its searches of the notes and the logs first (each sent
/// to each sink and driving each write, `search_source`), then its listings of the notes,
/// then each read one of its (non-denying) grants names, a note's read, a call of each MCP
/// tool and a run of each program its grants allow, and each write's result
/// (`write_source`), to each host of its
/// fetch grants, the consult model (when `consult` and it has a consult grant), each MCP
/// tool and program whose grant lists hosts and, when it delivers to Mattermost, its
/// delivery; untrusted content driving each write; and, after every job's other chains,
/// the look-alikes and smuggling from its first free read. Numbered from `first`.
pub fn plan(
    r: &Rewritten,
    jobs: &[Job],
    port: u16,
    nonce: &str,
    first: usize,
    consult: bool,
) -> Vec<JobChain> {
    let mut out = Vec::new();
    // Each job's first read that runs without asking, and its fetch sinks: the look-alike
    // and smuggling chains start from it.
    let mut from_one_read: Vec<(&JobName, Source, Vec<Target>)> = Vec::new();
    for job in jobs {
        let mine: Vec<(&String, &proto::Grant)> = r
            .jobs
            .iter()
            .filter(|(_, g)| g.job.as_ref() == Some(&job.name) && g.mode != Mode::Deny)
            .collect();
        let names = |tool: &str, shadow: &str| {
            mine.iter().any(|(_, g)| {
                g.tool == tool && g.constraints.paths.iter().any(|p| p.as_str() == shadow)
            })
        };
        let mut sources = Vec::new();
        for (owner, (shadow, file)) in &r.job_paths {
            let path = shadow.display().to_string();
            if names("read_file", &path) {
                let read = if *file {
                    path.clone()
                } else {
                    format!("{path}/{}", chains::READ_FILE)
                };
                sources.push(Source {
                    tool: "read_file",
                    owner: owner.clone(),
                    path: read,
                });
            }
            if names("list_dir", &path) && !file {
                sources.push(Source {
                    tool: "list_dir",
                    owner: owner.clone(),
                    path,
                });
            }
        }
        // A call of each MCP tool the job's grants allow, its stand-in answering the canary
        // (`mcp`).
        sources.extend(super::mcp::sources_of(mine.iter().map(|(_, g)| *g)));
        // A run of each program whose grant labels its output above public, its stand-in
        // printing the canary (`run_source`).
        sources.extend(super::run_source::labelled(mine.iter().map(|(_, g)| *g)));
        let mut targets = Vec::new();
        for (id, g) in &mine {
            let target = |tool: &'static str, entry: &str| Target {
                tool,
                grant: (*id).clone(),
                entry: entry.to_owned(),
                lookalike: None,
            };
            match g.tool.as_str() {
                "consult" if consult => targets.push(target("consult", chains::CONSULT)),
                "http_fetch" => {
                    targets.extend(g.constraints.hosts.iter().map(|h| target("http_fetch", h)))
                }
                _ => {}
            }
        }
        // An MCP tool of the job's whose grant lists hosts (`mcp`).
        targets.extend(super::mcp::targets_of(mine.iter().copied()));
        // A program of the job's whose grant lists hosts (`run`).
        targets.extend(super::run::targets_of(mine.iter().copied()));
        let deliver = Target {
            tool: DELIVER,
            grant: String::new(),
            entry: "Mattermost".into(),
            lookalike: None,
        };
        let mattermost = job.deliver == Deliver::Mattermost;
        if mattermost {
            targets.push(deliver.clone());
        }
        let of_job = |chain| JobChain {
            job: job.name.clone(),
            chain,
        };
        // A write or an edit, or a run in a program's working directory (`run::WRITE`).
        let writes = super::untrusted_write::writes(mine.iter().copied(), &r.job_paths);
        // A search of the notes or of the logs finding the chain's words (`search_source`),
        // to each of the job's sinks, then driving each write: first of the job's chains, the
        // lower-labelled tool's first, as their runs are played with the ordinary searches,
        // before anything else (`play`).
        for tool in super::search_source::order(r) {
            for sink in &targets {
                let n = first + out.len();
                if let Some(source) =
                    super::search_source::source(r, tool, n, true, Some(&job.name))
                {
                    let canary = chains::canary(nonce, n);
                    out.push(sent(&job.name, n, source, sink, canary, port));
                }
            }
            let searched = Planted::Search(r, tool, Some(&job.name));
            for w in &writes {
                let n = first + out.len();
                let Some((source, token)) = searched.of(n, nonce) else {
                    continue;
                };
                out.extend(w.chain(n, source, &token, &r.jobs).map(of_job));
            }
        }
        // A listing of the notes, holding a note named by the chain's canary, by a grant of
        // the job's that labels it above public, to each of the job's sinks (`note_source`),
        // then by any allowing one driving each write: after its searches, as their runs
        // are played before every chain and run but the searches (`play`: the note a search
        // or listing run delivers to is relabelled public and trusted after it).
        for sink in &targets {
            let n = first + out.len();
            let grants = mine.iter().map(|(_, g)| *g);
            if let Some(source) = super::note_source::list_source_of(grants, n, nonce, true) {
                let canary = chains::canary(nonce, n);
                out.push(sent(&job.name, n, source, sink, canary, port));
            }
        }
        let listed = Planted::List(mine.iter().map(|(_, g)| *g).collect());
        for w in &writes {
            let n = first + out.len();
            if let Some((source, token)) = listed.of(n, nonce) {
                out.extend(w.chain(n, source, &token, &r.jobs).map(of_job));
            }
        }
        let mut pairs: Vec<(Option<&Source>, &Target, &Target)> = Vec::new();
        for s in &sources {
            let apart = targets
                .iter()
                .filter(|t| super::mcp::apart(s, t) && super::run_source::apart(s, t));
            pairs.extend(apart.map(|t| (Some(s), t, t)));
        }
        // A local MCP server's tool of the job's reading what its grant binds and sending
        // it in one call (`mcp_bound`, decisions V65).
        for t in super::mcp::targets_of(mine.iter().copied()) {
            let n = first + out.len();
            out.extend(super::mcp_bound::chain(r, &t, port, nonce, n).map(of_job));
        }
        // A program of the job's doing the same (`run_bound::chain`).
        for t in super::run::targets_of(mine.iter().copied()) {
            let n = first + out.len();
            out.extend(super::run_bound::chain(r, &t, port, nonce, n).map(of_job));
        }
        // A fetch's answer delivered: the source is the fetch, whose answer (the sink's) holds
        // what the sink answers its URL's token with (`sink::WRITE`), in no request. One the
        // analysis labels public delivered is no flow (`Outcome::leaked_in`).
        if mattermost {
            let fetches = targets.iter().filter(|t| t.tool == "http_fetch");
            pairs.extend(fetches.map(|f| (None, f, &deliver)));
        }
        for (source, from, sink) in pairs {
            let n = first + out.len();
            let token = chains::canary(nonce, n);
            let (source, canary) = match source {
                Some(s) => (s.clone(), token.clone()),
                None => (
                    Source {
                        tool: "http_fetch",
                        owner: from.entry.clone(),
                        path: chains::send_subject(from, port, &token),
                    },
                    format!("{}{token}", super::sink::WRITE),
                ),
            };
            out.push(sent(&job.name, n, source, sink, canary, port));
        }
        // A fetch from each host of the job's fetch grants labelling its answer above public
        // (the sink answering the chain's path with its canary), to each of the job's sinks
        // but its own host and the delivery (played above, `fetch_source`).
        for entry in super::fetch_source::sources(r, mine.iter().copied(), port) {
            let own = |t: &Target| super::fetch_source::own(t, &entry);
            for sink in targets.iter().filter(|t| t.tool != DELIVER && !own(t)) {
                let n = first + out.len();
                let source = super::fetch_source::source(&entry, port, n);
                let canary = chains::canary(nonce, n);
                out.push(sent(&job.name, n, source, sink, canary, port));
            }
        }
        // A note of the chain's own, read by a grant of the job's that labels it private or
        // secret, to each of the job's sinks (`note_source`; its note planted with the
        // ordinary chains').
        for sink in &targets {
            let n = first + out.len();
            let grants = mine.iter().map(|(_, g)| *g);
            if let Some(source) = super::note_source::source_of(grants, n, true) {
                let canary = chains::canary(nonce, n);
                out.push(sent(&job.name, n, source, sink, canary, port));
            }
        }
        // A note write's answer likewise: an append to a note of the chain's own, its new
        // hash sent (`note_source`).
        for sink in &targets {
            let n = first + out.len();
            let grants = mine.iter().map(|(_, g)| *g);
            if let Some((source, hash)) =
                super::note_source::write_source_of(grants, n, nonce, true)
            {
                out.push(sent(&job.name, n, source, sink, hash, port));
            }
        }
        // Untrusted content driving a write: a fetch from each host of the job's fetch grants,
        // its answer (`BXWRITE-TOKEN`) written under each path of each of its write and edit
        // grants, in a file their patterns match (`pattern`), as an ordinary session's
        // (`chains`).
        let fetches: Vec<&Target> = targets.iter().filter(|t| t.tool == "http_fetch").collect();
        for w in &writes {
            for f in &fetches {
                let n = first + out.len();
                let token = chains::canary(nonce, n);
                let source = Source {
                    tool: "http_fetch",
                    owner: f.entry.clone(),
                    path: chains::send_subject(f, port, &token),
                };
                out.extend(w.chain(n, source, &token, &r.jobs).map(of_job));
            }
        }
        // A write's or an edit's result, to each sink (`write_source`).
        for (_, g) in mine.iter().filter(|(_, g)| super::write_source::plays(g)) {
            for (owner, dir) in super::write_source::dirs(g, &r.job_paths) {
                for sink in &targets {
                    let n = first + out.len();
                    let made = super::write_source::chain(g, (owner, &dir), n, sink, port, nonce);
                    let Some(mut chain) = made else { continue };
                    if sink.tool == DELIVER {
                        chain.url = answer(&chain.canary);
                    }
                    out.push(of_job(chain));
                }
            }
        }
        // The consult model's answer (with a consult model configured): sent to each of the
        // job's sinks but a consult (`consult_source`), and written by each write (decisions
        // V55); one the analysis labels public sent is no flow (`Outcome::leaked_in`).
        let consults = mine.iter().any(|(_, g)| consult && g.tool == "consult");
        let answered = |n: usize| {
            let token = chains::canary(nonce, n);
            let source = Source {
                tool: "consult",
                owner: chains::CONSULT.into(),
                path: format!("{}{token}", super::sink::ASK),
            };
            (source, token)
        };
        for sink in targets.iter().filter(|t| consults && t.tool != "consult") {
            let n = first + out.len();
            let (source, token) = answered(n);
            let canary = format!("{}{token}", super::sink::WRITE);
            out.push(sent(&job.name, n, source, sink, canary, port));
        }
        for w in writes.iter().filter(|_| consults) {
            let n = first + out.len();
            let (source, token) = answered(n);
            out.extend(w.chain(n, source, &token, &r.jobs).map(of_job));
        }
        // Untrusted content from a read, a listing or a write's or an edit's result driving
        // each write (`untrusted_write::from_results`, decisions V54).
        let mut planted: Vec<Planted> = sources
            .iter()
            .filter(|s| s.tool != "run")
            .cloned()
            .chain(super::run_source::outputs_of(mine.iter().map(|(_, g)| *g)))
            .map(Planted::Source)
            .collect();
        // A note of the chain's own, read by a grant of the job's (`note_source`).
        planted.push(Planted::Note(mine.iter().map(|(_, g)| *g).collect()));
        planted.push(Planted::NoteWrite(mine.iter().map(|(_, g)| *g).collect()));
        for (_, g) in mine.iter().filter(|(_, g)| super::write_source::plays(g)) {
            for (owner, dir) in super::write_source::dirs(g, &r.job_paths) {
                planted.push(Planted::Write(g, owner, dir));
            }
        }
        for p in &planted {
            for w in &writes {
                let n = first + out.len();
                let Some((source, token)) = p.of(n, nonce) else {
                    continue;
                };
                out.extend(w.chain(n, source, &token, &r.jobs).map(of_job));
            }
        }
        // From the job's first read that runs without asking (the ordinary grants' denials
        // apply in its runs too), as an ordinary session's: the look-alikes of each named
        // host of its fetch grants, and argument smuggling to the first (`smuggle`).
        let denies = r
            .grants
            .values()
            .chain(r.jobs.values())
            .filter(|g| g.mode == Mode::Deny && in_scope(g, Some(&job.name)));
        let by = mine.iter().map(|(_, g)| *g).chain(denies);
        let free = sources.iter().find(|s| {
            matches!(s.tool, "read_file" | "list_dir")
                && super::free::reads_freely_by(by.clone(), s.tool, &s.path)
        });
        if let Some(source) = free {
            let fetches = targets.iter().filter(|t| t.tool == "http_fetch").cloned();
            from_one_read.push((&job.name, source.clone(), fetches.collect()));
        }
    }
    // After every job's other chains (so that theirs keep their numbers).
    for (job, source, fetches) in from_one_read {
        for fetch in &fetches {
            for alike in chains::lookalikes(fetch) {
                let n = first + out.len();
                let canary = chains::canary(nonce, n);
                out.push(sent(job, n, source.clone(), &alike, canary, port));
            }
        }
        if let Some(fetch) = fetches.first() {
            let host = chains::host_of(&fetch.entry);
            let n = first + out.len();
            let smuggled = super::smuggle::chains(&source, fetch, &host, port, nonce, n);
            out.extend(smuggled.into_iter().map(|chain| JobChain {
                job: job.clone(),
                chain,
            }));
        }
    }
    out
}

/// Job `job`'s chain `n`: `source`, then `canary` sent to `sink` (for the delivery, the run's
/// answer carrying it).
fn sent(
    job: &JobName,
    n: usize,
    source: Source,
    sink: &Target,
    canary: String,
    port: u16,
) -> JobChain {
    let chain = Chain::carrying(n, source, sink, port, canary);
    JobChain {
        job: job.clone(),
        chain: match sink.tool {
            DELIVER => Chain {
                url: answer(&chain.canary),
                ..chain
            },
            _ => chain,
        },
    }
}

/// Makes the job grants' paths in the shadow (under `tree` only), then plants every chain's
/// canaries (`all`: the ordinary and the job chains' together, `chains::plant`).
pub fn plant(r: &Rewritten, all: &[Chain], tree: &Path) -> std::io::Result<()> {
    for (shadow, file) in r.job_paths.values() {
        if !shadow.starts_with(tree) {
            return Err(std::io::Error::other(format!(
                "{} is outside the shadow's tree {}",
                shadow.display(),
                tree.display()
            )));
        }
        match (file, shadow.parent()) {
            (true, Some(parent)) => std::fs::create_dir_all(parent)?,
            (true, None) => {}
            (false, _) => std::fs::create_dir_all(shadow)?,
        }
    }
    chains::plant(r, all, tree)
}
