//! The searches of the notes and of the session logs as sources of their own (docs/verify.md,
//! decisions V60): what an earlier session, or you, left in the notes or said, found by a
//! search and sent on. brokerd labels a search by its grants and by the highest index
//! partition its grant reaches (`max_class`) that holds anything, whatever it found, and a
//! search of the logs also by the highest label loopd was ever sent (docs/memory.md); the
//! analysis by its grants alone. So the shadow plants, for each chain, the words
//! `bxseekN TOKEN bxseekN` at the lowest label they can have: a note `bxseek-N` relabelled
//! public and trusted (`note_search`, planted with the other notes, `note_source`), or the
//! owner's words in a session of their own whose one call is a search of the logs (so that
//! brokerd labels it: a log it never saw is indexed secret; `session_search`). The search
//! chains are played before every other chain, the lower-labelled tool's first, each
//! tool's once the indexer indexed every one of its chains' words, while the index holds
//! only what they planted and what the search chains before them left. A search grant with
//! `untrusted = false` is not played as a source: every session a chain sends from reads the
//! sink's untrusted answer, and its log then raises every later search to untrusted.

use std::collections::BTreeMap;

use config::Config;
use proto::notes::HitKind;
use proto::tools::{NoteSearchArgs, SessionSearchArgs, ToolArgs};
use proto::{DataClass, Grant};

use super::chains::{Chain, Source, Target};
use super::rewrite::{Left, Rewritten, Scope};
use super::script::{Rule, call, rule};
use super::session;
use crate::Error;

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

/// The allowing grants of `tool` in `r` that cover chain `n`'s search (for the lines of the
/// grants not played, [`unplayed`], every one).
fn covering<'a>(r: &'a Rewritten, tool: &'a str, n: usize) -> impl Iterator<Item = &'a Grant> {
    let call = args(tool, n);
    r.grants.values().filter(move |g| {
        g.tool == tool
            && g.mode != proto::Mode::Deny
            && call
                .as_ref()
                .is_some_and(|a| grants::constraints::check(g, a).is_ok())
    })
}

/// Chain `n`'s search with `tool`, when an allowing grant covers it, none of the covering
/// grants says `untrusted = false` (`unplayed`), and, when `labelled`, one labels its
/// results private or secret (brokerd joins every covering grant's labels).
pub fn source(r: &Rewritten, tool: &'static str, n: usize, labelled: bool) -> Option<Source> {
    let owner = TOOLS.iter().find(|(t, _)| *t == tool)?.1;
    let mut grants = covering(r, tool, n).peekable();
    grants.peek()?;
    let mut above = false;
    for g in grants {
        if !g.untrusted {
            return None;
        }
        above |= g.result_class != DataClass::Public;
    }
    (above || !labelled).then(|| Source {
        tool,
        owner: owner.into(),
        path: word(n),
    })
}

/// The search tools in the order their chains are played: by the highest class any of
/// their allowing grants labels results with, lowest first (a search raises every later
/// one's that reaches the logs of its sessions).
pub fn order(r: &Rewritten) -> Vec<&'static str> {
    let rank = |tool: &str| {
        covering(r, tool, 0)
            .map(|g| g.result_class)
            .max()
            .unwrap_or(DataClass::Public)
    };
    let mut tools: Vec<&'static str> = TOOLS.iter().map(|(t, _)| *t).collect();
    tools.sort_by_key(|t| rank(t));
    tools
}

/// Adds a chain from a search of each kind to each of `targets` but the look-alikes, when a
/// grant whose results are private or secret covers it; numbered after `chains`.
pub fn plan(r: &Rewritten, targets: &[Target], port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    for (tool, _) in TOOLS {
        for sink in targets.iter().filter(|t| t.lookalike.is_none()) {
            let n = chains.len() + 1;
            if let Some(source) = source(r, tool, n, true) {
                chains.push(Chain::send(n, source, sink, port, nonce));
            }
        }
    }
}

/// The search grants saying `untrusted = false`, not played as a source (their other flows
/// are).
pub fn unplayed(r: &Rewritten) -> Vec<Left> {
    r.grants
        .iter()
        .filter(|(_, g)| {
            TOOLS.iter().any(|(t, _)| g.tool == *t) && g.mode != proto::Mode::Deny && !g.untrusted
        })
        .map(|(id, _)| Left {
            grant: id.clone(),
            why: "it says untrusted = false, and a search is raised to untrusted by every log it \
                  reaches of a session that read an untrusted answer (as the chains' sends do)"
                .into(),
            scope: Scope::Source,
        })
        .collect()
}

/// The tag of the session that says a `session_search` chain's words.
fn plant_tag(c: &Chain) -> String {
    format!("[bxhostile chain {} words]", c.n)
}

/// The fake model's rule for the session saying chain `c`'s words: one search of the logs
/// (for a word no chain plants), so that brokerd sees the session and labels its log.
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

/// Before the first of `tool`'s chains is played: the sessions saying its `session_search`
/// chains' words, then the wait until the indexer indexed every one of its chains' words
/// (each chain's note, or its session's). Returns, by chain number, why a chain's words were
/// not indexed in time.
pub fn prepare(
    config: &Config,
    tool: &str,
    chains: &[Chain],
) -> Result<BTreeMap<usize, String>, Error> {
    let mine: Vec<&Chain> = chains
        .iter()
        .filter(|c| is(c) && c.source.tool == tool)
        .collect();
    let mut sessions = BTreeMap::new();
    for c in mine.iter().filter(|c| c.source.tool == "session_search") {
        let text = format!("{} {}", plant_tag(c), words(c));
        let played = session::play(config, &text)?;
        sessions.insert(c.n, played.session);
    }
    let mut late = BTreeMap::new();
    for c in mine {
        let (kind, what) = match c.source.tool {
            "note_search" => (HitKind::Note, "the chain's note"),
            _ => (HitKind::Session, "the session saying the chain's words"),
        };
        let name = note(c).map(|(name, _)| name);
        let session = sessions.get(&c.n).cloned().flatten();
        let why = super::search::found(
            config,
            &c.source.path,
            c.awaited(),
            (kind, name.as_ref(), session.as_ref()),
            what,
        )?;
        if let Some(why) = why {
            late.insert(c.n, why);
        }
    }
    Ok(late)
}
