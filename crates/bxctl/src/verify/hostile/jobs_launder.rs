//! Laundering through a note a job's run leaves (docs/verify.md, decisions V66, V67): a run
//! reads a secret of the job's grants and leaves it in a note: its delivery, for a job
//! delivering to note N (brokerd writes the run's answer to N labelled as the run was,
//! `Broker::job_note`), or a `note_write` of a note of the chain's own (`bxjobnote-N`) by a
//! grant of the job's; then an ordinary session reads the note back by an ordinary
//! `note_read` grant and sends it through an ordinary fetch grant whose `max_taint` is below
//! secret. The note's label comes from the run's decisions, so the read must raise the
//! session to secret and the send must stop; a note labelled lower (a second computation,
//! the session's label before the read, or none) lets the canary out, keyed by the job's
//! read grant and the ordinary sink, which the analysis never reports: a `FAIL`
//! (`jobs_check`). Played last of the job runs (a secret note raises every later listing of
//! the notes).

use config::{Deliver, Job};
use proto::tools::{HttpFetchArgs, NoteMode, NoteReadArgs, NoteWriteArgs, ToolArgs};
use proto::{DataClass, Grant, Mode};

use super::chains::{self, Chain, Source, Target};
use super::jobs::JobChain;
use super::rewrite::{Rewritten, in_scope};
use super::script::{self, Answer, Call, Rule, When};

/// The name of a note a run writes itself, before its chain's number.
const WRITTEN: &str = "bxjobnote-";

/// Whether `c` is a job chain laundering through a note its run leaves.
pub fn is(c: &Chain) -> bool {
    c.note.is_some()
}

/// Whether `c`'s run writes its note itself (else it delivers to it).
fn written(c: &Chain) -> bool {
    c.note.as_deref().is_some_and(|n| n.starts_with(WRITTEN))
}

/// How chain `c`'s run leaves the canary in its note, as its line says it.
pub fn left_by(c: &Chain) -> &'static str {
    if written(c) {
        "write it to"
    } else {
        "deliver it to"
    }
}

/// What chain `c`'s run does once its read returned the canary: writes its note, or answers
/// with the canary (its delivery).
pub fn run_answer(c: &Chain) -> Answer {
    match (&c.note, written(c)) {
        (Some(name), true) => {
            let args = serde_json::json!({"mode": "replace", "name": name, "text": c.canary});
            Answer {
                text: String::new(),
                tool_calls: vec![Call {
                    name: "note_write".into(),
                    arguments: args.to_string(),
                }],
            }
        }
        _ => script::say(&super::jobs::answer(&c.canary)),
    }
}

/// Whether a run of `job` writes note `name` without asking: an allowing grant of the job's
/// covers it, and every grant that may decide it there (the job's, the ordinary denials) is
/// `auto` at private (a run starts private).
fn writes_freely(r: &Rewritten, job: &Job, name: &str) -> bool {
    let args = ToolArgs::NoteWrite(NoteWriteArgs {
        mode: NoteMode::Replace,
        name: name.into(),
        text: "bxhostile".into(),
    });
    let mut deciding = r
        .grants
        .values()
        .chain(r.jobs.values())
        .filter(|g| g.tool == "note_write" && g.expires.is_none())
        .filter(|g| in_scope(g, Some(&job.name)))
        .filter(|g| grants::constraints::check(g, &args).is_ok())
        .peekable();
    deciding.peek().is_some()
        && deciding.all(|g| g.mode == Mode::Auto && g.max_taint >= DataClass::Private)
}

/// Whether an ordinary session reads note `name` without asking, at a label the note alone
/// raises to secret: an allowing grant of an ordinary session covers it, every ordinary one
/// covering it is `auto` and admits private (a session starts there), and no grant covering
/// it, any scope or mode, labels its results secret (brokerd joins them all: such a grant
/// would raise the session to secret whatever the note's label, and a note labelled too low
/// would go unseen).
fn read_freely(r: &Rewritten, name: &str) -> bool {
    let args = ToolArgs::NoteRead(NoteReadArgs { name: name.into() });
    let covers = |g: &&Grant| g.tool == "note_read" && grants::constraints::check(g, &args).is_ok();
    let mut ordinary = r
        .grants
        .values()
        .filter(covers)
        .filter(|g| g.expires.is_none())
        .peekable();
    let labelled_below = r
        .grants
        .values()
        .chain(r.jobs.values())
        .filter(covers)
        .all(|g| g.result_class < DataClass::Secret);
    ordinary.peek().is_some()
        && ordinary.all(|g| g.mode == Mode::Auto && g.max_taint >= DataClass::Private)
        && labelled_below
}

/// The ordinary fetch sinks that take private data and no secret: each host of each
/// allowing ordinary fetch grant, when every ordinary grant covering the chain's send there
/// is `auto` with `max_taint` private and lets an untrusted session send (the note's read
/// may be untrusted). Another that admits secret would rightly send the note's secret there
/// (no flow of the job's to report), one that asks or denies stops the send whatever the
/// note's label, and a send at public is refused to every session: none of those could
/// tell a note labelled too low.
fn below_secret(r: &Rewritten, port: u16) -> Vec<Target> {
    let allowing = |g: &&Grant| g.tool == "http_fetch" && g.mode != Mode::Deny;
    let mut out = Vec::new();
    for (id, g) in r.grants.iter().filter(|(_, g)| allowing(g)) {
        for h in &g.constraints.hosts {
            let t = Target {
                tool: "http_fetch",
                grant: id.clone(),
                entry: h.clone(),
                lookalike: None,
            };
            let url = chains::send_subject(&t, port, "BXCANARY-0000-0-");
            let args = ToolArgs::HttpFetch(HttpFetchArgs { url });
            let mut covering = r
                .grants
                .values()
                .filter(|g| g.tool == "http_fetch")
                .filter(|g| grants::constraints::check(g, &args).is_ok());
            let private_only = covering.all(|g| {
                g.mode == Mode::Auto
                    && g.max_taint == DataClass::Private
                    && g.if_untrusted.is_none()
            });
            if private_only {
                out.push(t);
            }
        }
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

/// For each job with a secret read, a chain from its first to each ordinary fetch sink
/// below secret through each note its run leaves that an ordinary session reads without
/// asking: its delivery note (the run answers with the canary), and a note of the chain's
/// own that a grant of the job's writes without asking (the run writes it). Numbered from
/// `first`.
pub fn plan(r: &Rewritten, jobs: &[Job], port: u16, nonce: &str, first: usize) -> Vec<JobChain> {
    let sinks = below_secret(r, port);
    let mut out = Vec::new();
    for job in jobs {
        let Some(source) = secret_read(r, job) else {
            continue;
        };
        // The delivery note, when an ordinary session reads it without asking.
        let delivered = match &job.deliver {
            Deliver::Note(note) => Some(note.to_string()).filter(|n| read_freely(r, n)),
            Deliver::Mattermost => None,
        };
        let chain = |note: String, n: usize, sink: &Target| JobChain {
            job: job.name.clone(),
            chain: Chain {
                note: Some(note),
                ..Chain::send(n, source.clone(), sink, port, nonce)
            },
        };
        for sink in &sinks {
            if let Some(note) = delivered.clone() {
                out.push(chain(note, first + out.len(), sink));
            }
            let n = first + out.len();
            let own = format!("{WRITTEN}{n}");
            if writes_freely(r, job, &own) && read_freely(r, &own) {
                out.push(chain(own, n, sink));
            }
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
