//! The searches of the notes and of the session logs as sources of their own (docs/verify.md,
//! decisions V60): what an earlier session, or you, left in the notes or said, found by a
//! search and sent on. brokerd labels a search by its grants and by the highest index
//! partition its grant reaches (`max_class`) that holds anything, whatever it found, and a
//! search of the logs also by the highest label loopd was ever sent (docs/memory.md); the
//! analysis by its grants alone. So the shadow plants, for each chain, the words
//! `bxseekN TOKEN bxseekN` at the lowest label they can have: a note `bxseek-N` relabelled
//! public and trusted (`note_search`, planted with the other notes, `note_source`), or the
//! owner's words in a session of their own whose one call is a search of the logs (so that
//! brokerd labels it: a log it never saw is indexed secret; `session_search`); for a job
//! run's search of the logs, the model's words in a run of the job whose one call is the
//! job's search (decisions V71). Only a search
//! that runs without asking is played ([`free`]: a declined one leaves a log brokerd never
//! labels). The search chains are played before every other chain, the lower-labelled
//! tool's first; the shadow's indexer is stopped while the words' sessions run, started
//! until every one of the tool's chains' words is indexed at the label planted, and stopped
//! while the tool's chains play ([`prepare`]). A search still labelled above the analysis's
//! is set aside ([`raised`]). A search its covering grants label trusted is not played as a
//! source: every session a chain sends from reads the sink's untrusted answer, and its log
//! then raises every later search to untrusted; nor is a logs' search whose `max_class`
//! cannot reach the words ([`unplayed`]).

use std::collections::BTreeMap;

use config::Config;
use proto::ToolResponse;
use proto::flows::FlowsReport;
use proto::notes::HitKind;
use proto::tools::{NoteSearchArgs, SessionSearchArgs, ToolArgs};
use proto::{DataClass, Grant, JobName, SessionId};

use super::chains::{Chain, Source, Target};
use super::rewrite::{Left, Rewritten, Scope, in_scope};
use super::script::{Rule, call, rule};
use super::session;
use crate::Error;
use crate::dev::shadow::Shadow;

/// The two searches, as their chains name what they search.
const TOOLS: [(&str, &str); 2] = [
    ("note_search", "the notes"),
    ("session_search", "the session logs"),
];

/// The word chain `n`'s search looks for (one token to the index, no other chain's).
fn word(n: usize) -> String {
    format!("bxseek{n}")
}

/// Whether `c` starts from a search of its own words.
pub fn is(c: &Chain) -> bool {
    TOOLS
        .iter()
        .any(|(tool, owner)| c.source.tool == *tool && c.source.owner == *owner)
        && c.note.is_none()
}

/// What chain `c` plants for its search to find: the result it waits for between the word
/// twice, so that the search's snippet holds it whole.
pub fn words(c: &Chain) -> String {
    format!("{w} {} {w}", c.awaited(), w = c.source.path)
}

/// The note a `note_search` chain's words are planted in, with its text (`note_source`).
pub fn note(c: &Chain) -> Option<(String, String)> {
    (is(c) && c.source.tool == "note_search").then(|| (format!("bxseek-{}", c.n), words(c)))
}

/// The search call chain `n` makes with `tool`.
fn args(tool: &str, n: usize) -> Option<ToolArgs> {
    let query = word(n);
    match tool {
        "note_search" => Some(ToolArgs::NoteSearch(NoteSearchArgs { query })),
        "session_search" => Some(ToolArgs::SessionSearch(SessionSearchArgs { query })),
        _ => None,
    }
}

/// Every grant of `r` covering chain `n`'s search with `tool`, any mode, scope or expiry:
/// brokerd joins all their labels (`decide_in`).
fn covering<'a>(r: &'a Rewritten, tool: &'a str, n: usize) -> impl Iterator<Item = &'a Grant> {
    let call = args(tool, n);
    r.grants.values().chain(r.jobs.values()).filter(move |g| {
        g.tool == tool
            && call
                .as_ref()
                .is_some_and(|a| grants::constraints::check(g, a).is_ok())
    })
}

/// The label chain `n`'s search with `tool` takes from its grants: every covering grant's
/// joined (the highest class; untrusted if any says so).
fn joined(r: &Rewritten, tool: &str, n: usize) -> (DataClass, bool) {
    covering(r, tool, n).fold((DataClass::Public, false), |(c, u), g| {
        (c.max(g.result_class), u || g.untrusted)
    })
}

/// Whether chain `n`'s search with `tool` runs without asking at the start of a session
/// (`job`: of a run of that job): an allowing grant in scope covers it, and every covering
/// one in force decides `auto` at private (a search asked and declined, or refused, runs no
/// call, so brokerd never labels its session, and the indexer files that session's log as
/// secret: every later search reaching it would be raised).
pub(super) fn free(r: &Rewritten, tool: &str, n: usize, job: Option<&JobName>) -> bool {
    let mut deciding = deciding(r, tool, n, job).peekable();
    deciding.peek().is_some() && deciding.all(|g| g.mode == proto::Mode::Auto)
}

/// The grants that may decide chain `n`'s search with `tool` at the start of a session
/// (`job`: of a run of that job), as `decide_in` picks among them: in scope (an ordinary
/// session's own; a job's run's, and the ordinary denials), in force, and a denial or one
/// whose `max_taint` admits private.
fn deciding<'a>(
    r: &'a Rewritten,
    tool: &'a str,
    n: usize,
    job: Option<&'a JobName>,
) -> impl Iterator<Item = &'a Grant> {
    let now = proto::Timestamp::now();
    covering(r, tool, n)
        .filter(move |g| in_scope(g, job) && g.expires.is_none_or(|t| t > now))
        .filter(|g| g.mode == proto::Mode::Deny || g.max_taint >= DataClass::Private)
}

/// Chain `n`'s search with `tool` in a session (`job`: in a run of that job), when it runs
/// without asking ([`free`]), its grants' joined label is untrusted (`unplayed`) and, when
/// `labelled`, private or secret.
pub fn source(
    r: &Rewritten,
    tool: &'static str,
    n: usize,
    labelled: bool,
    job: Option<&JobName>,
) -> Option<Source> {
    let owner = TOOLS.iter().find(|(t, _)| *t == tool)?.1;
    let (class, untrusted) = joined(r, tool, n);
    // A trusted search is a source of data out, never of an untrusted write.
    let labelled_as = untrusted || (labelled && trusted_first(r, tool, n));
    let playable = free(r, tool, n, job) && labelled_as && reaches(r, tool, n, job);
    (playable && (class != DataClass::Public || !labelled)).then(|| Source {
        tool,
        owner: owner.into(),
        path: word(n),
    })
}

/// Whether a search every grant covering it labels trusted plays while the index holds
/// nothing untrusted: a search of the notes (the logs' is labelled by everything loopd was
/// ever sent, the sink's untrusted answers among them) played before any search of the
/// logs, whose chains' sessions read the sink's untrusted answers and, once indexed, would
/// raise it (both searches reach the same partitions, notes and session records alike).
/// The index is stopped while a tool's chains play (`prepare`), so its own chains' sessions
/// raise nothing of it (decisions V68).
fn trusted_first(r: &Rewritten, tool: &str, n: usize) -> bool {
    // Whether searches of the logs may play first (any of them labelled untrusted is).
    let logs_first =
        order(r).first() == Some(&"session_search") && joined(r, "session_search", n).1;
    tool == "note_search" && !logs_first
}

/// Whether every deciding grant's `max_class` reaches what chain `n`'s search with `tool`
/// finds (`job`: in a run of that job): a note at public, a session's words at private at
/// least (every session starts there) and at its grants' class (its one call is the same
/// search).
pub(super) fn reaches(r: &Rewritten, tool: &str, n: usize, job: Option<&JobName>) -> bool {
    let planted = match tool {
        "session_search" => joined(r, tool, n).0.max(DataClass::Private),
        _ => DataClass::Public,
    };
    // Asked only of a search that runs freely ([`free`]): every grant that may decide it
    // is `auto`.
    deciding(r, tool, n, job).all(|g| g.constraints.max_class.is_none_or(|m| m >= planted))
}

/// The search tools in the order their chains are played: by the class their grants label
/// results with, lowest first (a search raises every later one that reaches the logs of
/// its sessions).
pub fn order(r: &Rewritten) -> Vec<&'static str> {
    let mut tools: Vec<&'static str> = TOOLS.iter().map(|(t, _)| *t).collect();
    tools.sort_by_key(|t| joined(r, t, 0).0);
    tools
}

/// Adds a chain from a search of each kind to each of `targets` but the look-alikes, when a
/// grant whose results are private or secret covers it; numbered after `chains`.
pub fn plan(r: &Rewritten, targets: &[Target], port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    for (tool, _) in TOOLS {
        for sink in targets.iter().filter(|t| t.lookalike.is_none()) {
            let n = chains.len() + 1;
            if let Some(source) = source(r, tool, n, true, None) {
                chains.push(Chain::send(n, source, sink, port, nonce));
            }
        }
    }
}

/// The allowing search grants whose search runs freely (in an ordinary session, or in a
/// run of their job) but is not played as a source (their other flows are): the joined
/// label is trusted (every session a chain sends from reads the sink's untrusted answer, and
/// its log raises every later search to untrusted), or a `max_class` reaches none of what
/// the shadow plants.
pub fn unplayed(r: &Rewritten) -> Vec<Left> {
    let jobs: std::collections::BTreeSet<&JobName> =
        r.jobs.values().filter_map(|g| g.job.as_ref()).collect();
    let scopes = std::iter::once(None).chain(jobs.into_iter().map(Some));
    let mut out = Vec::new();
    for job in scopes {
        for (tool, _) in TOOLS {
            if !free(r, tool, 0, job) {
                continue;
            }
            let (class, untrusted) = joined(r, tool, 0);
            // Public and trusted: the source of no flow.
            if !untrusted && class == DataClass::Public {
                continue;
            }
            let why: &str = if !untrusted && !trusted_first(r, tool, 0) {
                "every grant covering it says untrusted = false, and a search is raised to \
                 untrusted by every log it reaches of a session that read an untrusted answer \
                 (as the chains' sends do; a search of the notes is played so only before any \
                 search of the logs)"
            } else if !reaches(r, tool, 0, job) {
                "its max_class reaches none of what the shadow plants for it (a note at public, \
                 a session's words at private and at the search's own label)"
            } else {
                continue;
            };
            let source =
                |g: &Grant| g.tool == tool && g.job.as_ref() == job && g.mode != proto::Mode::Deny;
            let ids = r.grants.iter().chain(&r.jobs).filter(|(_, g)| source(g));
            // A job's grant's line says its job.
            let why = match job {
                Some(j) => format!("in job {j}'s runs, {why}"),
                None => why.to_owned(),
            };
            out.extend(ids.map(|(id, _)| Left {
                grant: id.clone(),
                why: why.clone(),
                scope: Scope::Source,
            }));
        }
    }
    out
}

/// The tag of the session that says a `session_search` chain's words.
fn plant_tag(c: &Chain) -> String {
    format!("[bxhostile chain {} words]", c.n)
}

/// The fake model's rule for the ordinary session saying chain `c`'s words: one search of
/// the logs (for a word no chain plants), so that brokerd sees the session and labels its
/// log.
pub fn rules(c: &Chain) -> Option<Rule> {
    (is(c) && c.source.tool == "session_search").then(|| {
        rule(
            format!("chain {} words", c.n),
            1,
            plant_tag(c),
            None,
            call("session_search", "query", "bxseekplanted"),
        )
    })
}

/// The fake model's rule for the run of job `job` (its prompt `tag`) saying chain `c`'s words,
/// `c` a search of the logs in the job's runs: the model's own words, with one search of the
/// logs by the job's grant (for the chain's word, which the index does not hold yet), so
/// that brokerd sees the run's session and labels its log; the run then ends saying `done`
/// (its delivery holds none of the words). A job's search of the logs finds the words of
/// a run of its own, whatever an ordinary session may do (decisions V71).
pub fn job_rules(c: &Chain, job: &JobName, tag: &str) -> Option<Rule> {
    (is(c) && c.source.tool == "session_search").then(|| {
        let mut answer = call("session_search", "query", &word(c.n));
        answer.text = format!("{} {}", plant_tag(c), words(c));
        rule(
            format!("job {job} chain {} words", c.n),
            1,
            tag.to_owned(),
            None,
            answer,
        )
    })
}

/// How the words of a search of the logs are said: `None` for an ordinary chain's (an
/// ordinary session says them, [`rules`]); for a job run's chain, the session of a run of its
/// job saying them ([`job_rules`]), when one started.
pub type Say<'a> = dyn FnMut(&Chain) -> Result<Option<Option<SessionId>>, String> + 'a;

/// Before the first of `tool`'s chains is played, in the running `shadow` (`config`): the
/// sessions saying its `session_search` chains' words (`say`), the indexer stopped meanwhile
/// (so that it never files a session's first records before brokerd labels the session);
/// then the wait until the indexer indexed every one of its chains' words (each chain's note,
/// or its session's) in the partition of the label planted; then the indexer is stopped
/// again, so that no session of the chains played next is indexed before they all ran (each
/// would raise the searches after it). Returns, by chain number, why a chain's words were
/// not indexed in time.
pub fn prepare(
    shadow: &mut Shadow,
    config: &Config,
    tool: &str,
    chains: &[Chain],
    say: &mut Say<'_>,
) -> Result<BTreeMap<usize, String>, String> {
    let text = |e: Error| e.to_string();
    let mine: Vec<&Chain> = chains
        .iter()
        .filter(|c| is(c) && c.source.tool == tool)
        .collect();
    shadow.pause_indexer();
    let mut sessions = BTreeMap::new();
    for c in mine.iter().filter(|c| c.source.tool == "session_search") {
        let session = match say(c)? {
            Some(session) => session,
            None => {
                let words = format!("{} {}", plant_tag(c), words(c));
                session::play(config, &words).map_err(text)?.session
            }
        };
        sessions.insert(c.n, session);
    }
    shadow.resume_indexer().map_err(text)?;
    let mut late = BTreeMap::new();
    for c in mine {
        let (kind, what) = match c.source.tool {
            "note_search" => (HitKind::Note, "the chain's note"),
            _ => (HitKind::Session, "the session saying the chain's words"),
        };
        let name = note(c).map(|(name, _)| name);
        let session = sessions.get(&c.n).cloned().flatten();
        // In the partition of the label planted: the note's, relabelled; the session's, as
        // brokerd exported it once its call ran (before that the indexer files its log as
        // secret and untrusted, and moves it when the label appears).
        let label = match c.source.tool {
            "note_search" => Some((DataClass::Public, false)),
            _ => session.as_ref().and_then(|id| exported(config, id)),
        };
        let why = super::search::found(
            config,
            &c.source.path,
            c.awaited(),
            (kind, name.as_ref(), session.as_ref()),
            label,
            what,
        )
        .map_err(text)?;
        if let Some(why) = why {
            late.insert(c.n, why);
        }
    }
    shadow.pause_indexer();
    Ok(late)
}

/// Why search chain `c`'s search (its outcome `o`) is set aside: its result was labelled
/// above what the analysis gives its deciding grant (what the index or loopd held by then,
/// left by the chains before it, raised it), so what happened after it tests nothing the
/// analysis says; `None`: it was not, or `c` is no search chain. `job`: the chain is a run of
/// that job, and the analysis's label is its sources' in that job.
pub fn raised(
    r: &Rewritten,
    c: &Chain,
    o: &super::compare::Outcome,
    analysis: &FlowsReport,
    job: Option<&JobName>,
) -> Option<String> {
    let (Some(grant), true) = (o.grants().0, is(c)) else {
        return None;
    };
    let Some(ToolResponse::Result {
        class, untrusted, ..
    }) = o.source.as_ref().and_then(|(_, s)| s.response.as_ref())
    else {
        return None;
    };
    let mut named = analysis
        .sources
        .iter()
        .filter(|s| s.job.as_ref() == job && s.source.grant.as_deref() == Some(grant))
        .peekable();
    // No label of the analysis's for the grant: nothing to be above.
    named.peek()?;
    let said = named.fold((DataClass::Public, false), |(k, u), s| {
        (k.max(s.class), u || s.untrusted)
    });
    // Only when the analysis gives at least what the grants give (else the analysis is the
    // one that is low, a disagreement for `compare` to fail on).
    let grants = joined(r, c.source.tool, c.n);
    if said.0 < grants.0 || (grants.1 && !said.1) {
        return None;
    }
    let above = *class > said.0 || (*untrusted && !said.1);
    let label =
        |(k, u): (DataClass, bool)| format!("{}{}", k.as_str(), if u { ", untrusted" } else { "" });
    above.then(|| {
        format!(
            "the search was labelled {}, above the {} the flows analysis gives grant {grant}: \
             what the chains before it left in the index raised it",
            label((*class, *untrusted)),
            label(said)
        )
    })
}

/// The label brokerd exported for session `id` (`session-labels/<id>.json`, which the
/// indexer files the session's log by); `None` when it has none.
fn exported(config: &Config, id: &SessionId) -> Option<(DataClass, bool)> {
    let path = config.session_labels_dir().join(format!("{id}.json"));
    let text = std::fs::read(path).ok()?;
    let l: proto::notes::SessionLabel = serde_json::from_slice(&text).ok()?;
    Some((l.class, l.untrusted))
}
