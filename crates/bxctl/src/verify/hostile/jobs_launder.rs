//! Laundering through a job's delivery to a note (docs/verify.md, decisions V66): a run of a
//! job delivering to note N reads a secret of the job's grants and answers with it, which
//! brokerd writes to N labelled as the run was (`Broker::job_note`: the label its decision
//! left); then an ordinary session reads N back by an ordinary `note_read` grant and sends it
//! through an ordinary fetch grant whose `max_taint` is below secret. The note's label comes
//! from the run, so the read must raise the session to secret and the send must stop; a
//! note labelled lower (a second computation, the session's label before the read, or
//! none) lets the canary out, keyed by the job's read grant and the ordinary sink, which
//! the analysis never reports: a `FAIL` (`jobs_check`). Played last of the job runs (the
//! note it delivers raises every later listing of the notes).

use config::{Deliver, Job};
use proto::tools::{NoteReadArgs, ToolArgs};
use proto::{DataClass, Grant, Mode};

use super::chains::{self, Chain, Source, Target};
use super::jobs::JobChain;
use super::rewrite::Rewritten;
use super::script::{self, Rule, When};

/// Whether `c` is a job chain laundering through its job's delivery note.
pub fn is(c: &Chain) -> bool {
    c.note.is_some()
}

/// Whether an ordinary session reads note `name` without asking: an allowing grant of an
/// ordinary session covers it, and every one that covers it is `auto`.
fn read_freely(r: &Rewritten, name: &str) -> bool {
    let args = ToolArgs::NoteRead(NoteReadArgs { name: name.into() });
    let mut covering = r
        .grants
        .values()
        .filter(|g| g.tool == "note_read" && g.expires.is_none())
        .filter(|g| grants::constraints::check(g, &args).is_ok())
        .peekable();
    covering.peek().is_some() && covering.all(|g| g.mode == Mode::Auto)
}

/// The ordinary fetch sinks a secret may not leave by: each host of each allowing ordinary
/// fetch grant whose `max_taint` is below secret.
fn below_secret(r: &Rewritten) -> Vec<Target> {
    let allowing = |g: &&Grant| {
        g.tool == "http_fetch" && g.mode != Mode::Deny && g.max_taint < DataClass::Secret
    };
    let mut out = Vec::new();
    for (id, g) in r.grants.iter().filter(|(_, g)| allowing(g)) {
        out.extend(g.constraints.hosts.iter().map(|h| Target {
            tool: "http_fetch",
            grant: id.clone(),
            entry: h.clone(),
            lookalike: None,
        }));
    }
    out
}

/// The job's first read of a path its grants label secret (`job_paths`: each owner's path
/// to the shadow's, and whether it is a file).
fn secret_read(r: &Rewritten, job: &Job) -> Option<Source> {
    let mine = |g: &&Grant| {
        g.job.as_ref() == Some(&job.name) && g.mode != Mode::Deny && g.tool == "read_file"
    };
    let grants: Vec<&Grant> = r.jobs.values().filter(mine).collect();
    r.job_paths.iter().find_map(|(owner, (shadow, file))| {
        let path = shadow.display().to_string();
        let names = |g: &&&Grant| g.constraints.paths.contains(&path);
        grants
            .iter()
            .filter(names)
            .any(|g| g.result_class == DataClass::Secret)
            .then(|| Source {
                tool: "read_file",
                owner: owner.clone(),
                path: if *file {
                    path.clone()
                } else {
                    format!("{path}/{}", chains::READ_FILE)
                },
            })
    })
}

/// For each job delivering to a note an ordinary session reads without asking, a chain from
/// its first secret read to each ordinary fetch sink below secret: the run answers with
/// the canary (delivered to the note), the ordinary session reads the note and sends it.
/// Numbered from `first`.
pub fn plan(r: &Rewritten, jobs: &[Job], port: u16, nonce: &str, first: usize) -> Vec<JobChain> {
    let sinks = below_secret(r);
    let mut out = Vec::new();
    for job in jobs {
        let Deliver::Note(note) = &job.deliver else {
            continue;
        };
        let Some(source) = secret_read(r, job).filter(|_| read_freely(r, note.as_str())) else {
            continue;
        };
        for sink in &sinks {
            let n = first + out.len();
            out.push(JobChain {
                job: job.name.clone(),
                chain: Chain {
                    note: Some(note.to_string()),
                    ..Chain::send(n, source.clone(), sink, port, nonce)
                },
            });
        }
    }
    out
}

/// The ordinary session's rules of chain `c`: read the job's note back, then, once the
/// canary is in what it read, send it.
pub fn back_rules(c: &Chain) -> Vec<Rule> {
    let Some(note) = &c.note else {
        return Vec::new();
    };
    let when = |canary: Option<String>| When {
        user_contains: c.back_tag(),
        tool_result_contains: canary,
        history_contains: None,
    };
    vec![
        Rule {
            name: format!("chain {} delivered note sink", c.n),
            max_uses: 1,
            when: when(Some(c.canary.clone())),
            answer: script::send(c),
        },
        Rule {
            name: format!("chain {} delivered note read", c.n),
            max_uses: 1,
            when: when(None),
            answer: script::call("note_read", "name", note),
        },
    ]
}
