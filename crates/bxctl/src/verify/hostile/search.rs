//! Laundering by search (docs/threat-model.md, docs/memory.md): like the note chain, from
//! every read to every sink, but the new session finds what the read's session left by
//! searching for its words instead of reading it by name. Through the notes (`note_search`,
//! when the grants write notes and search them): the read's session writes
//! `WORD CANARY WORD` to a note `bxsearch-N`. Through the session logs (`session_search`,
//! when the grants search them): the read's session says it, and loopd logs that. The
//! shadow's indexer (watching, as under `bxctl dev`) indexes it under the session's label;
//! the self-test waits until the owner's search (brokerd's admin side) finds it, and only
//! then starts the new session, whose search (labelled by what its grant reaches, whatever
//! it found) must bring the session to at least the label the read left, so the send stops
//! where the direct one does. What the indexer never indexed is `not observed`
//! (docs/decisions.md V34). A search chain is a note chain (`Chain::note`) whose name says
//! how the new session finds it: `bxsearch-N` by `note_search`, `bxsession-N` (no note is
//! written) by `session_search`.

use std::time::{Duration, Instant};

use config::Config;
use proto::notes::{HitKind, NotesSearch};
use proto::{Message, SessionId};

use super::chains::{Chain, Source, Target};
use super::rewrite::Rewritten;
use super::script::{Answer, Call, Rule, When, call, send};
use crate::Error;

/// The note name prefix of a chain that finds its note by `note_search`.
const NOTE: &str = "bxsearch-";

/// The name prefix of a chain that finds the read's session's words by `session_search`.
const SESSION: &str = "bxsession-";

/// How long the self-test waits for the indexer to index what a chain's first session left
/// (it makes a pass every second).
const INDEXED_WITHIN: Duration = Duration::from_secs(30);

/// How a note chain's new session finds what the first one left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `note_read`, by the note's name (`chains`).
    Read,
    /// `note_search`, for the note's words.
    NoteSearch,
    /// `session_search`, for the first session's words in loopd's log.
    SessionSearch,
}

pub fn via(c: &Chain) -> Option<Via> {
    let name = c.note.as_deref()?;
    Some(if name.starts_with(NOTE) {
        Via::NoteSearch
    } else if name.starts_with(SESSION) {
        Via::SessionSearch
    } else {
        Via::Read
    })
}

/// The word a search chain's new session searches for: one token to the index (letters and
/// digits), no other chain's (`bxfind2` is not `bxfind21`).
pub fn word(c: &Chain) -> String {
    format!("bxfind{}", c.n)
}

/// What the first session leaves: the canary between the word twice, so that the search's
/// snippet (the words around the match) holds the canary whole, its last `-` included.
pub fn left(c: &Chain) -> String {
    let w = word(c);
    format!("{w} {} {w}", c.canary)
}

/// The search chains, numbered on from `chains`: each read to each sink, by `note_search`
/// when a non-denying grant writes notes and one searches them, and by `session_search`
/// when one searches the session logs.
pub fn plan(
    r: &Rewritten,
    sources: &[Source],
    targets: &[Target],
    port: u16,
    nonce: &str,
    chains: &mut Vec<Chain>,
) {
    let has = |tool: &str| {
        r.grants
            .values()
            .any(|g| g.tool == tool && g.mode != proto::Mode::Deny)
    };
    let ways = [
        (has("note_write") && has("note_search"), NOTE),
        (has("session_search"), SESSION),
    ];
    for (_, prefix) in ways.into_iter().filter(|(on, _)| *on) {
        for source in sources {
            for sink in targets {
                let n = chains.len() + 1;
                chains.push(Chain {
                    note: Some(format!("{prefix}{n}")),
                    ..Chain::send(n, source.clone(), sink, port, nonce)
                });
            }
        }
    }
}

/// How a chain's line says what happens between the read and the send (`compare`).
pub fn between(c: &Chain, name: &str) -> String {
    match via(c) {
        Some(Via::NoteSearch) => format!(
            ", write it to note {name} and find that by note_search for its words in a new \
             session"
        ),
        Some(Via::SessionSearch) => ", say it, and find that by session_search for its words \
                                     in a new session"
            .into(),
        _ => format!(", write it to note {name} and read that back in a new session"),
    }
}

/// The calls between the read and the send of a note chain: its name, its tool, and whether
/// the new session makes it (else the read's).
pub fn steps(c: &Chain) -> Vec<(&'static str, &'static str, bool)> {
    match via(c) {
        Some(Via::NoteSearch) => vec![
            ("note write", "note_write", false),
            ("note search", "note_search", true),
        ],
        Some(Via::SessionSearch) => vec![("session search", "session_search", true)],
        _ => vec![
            ("note write", "note_write", false),
            ("note read", "note_read", true),
        ],
    }
}

fn rule(name: String, user: String, tool_result: Option<String>, answer: Answer) -> Rule {
    Rule {
        name,
        max_uses: 1,
        when: When {
            user_contains: user,
            tool_result_contains: tool_result,
            history_contains: None,
        },
        answer,
    }
}

/// The fake model's rules for a search chain (`None` for any other): the read; once its
/// result holds the canary, the note written (or the words said); in the new session, the
/// search for the word, then, once its result holds the canary, the send.
pub fn rules(c: &Chain) -> Option<Vec<Rule>> {
    let via = via(c).filter(|v| *v != Via::Read)?;
    let (tool, name) = match via {
        Via::NoteSearch => ("note_search", "note search"),
        _ => ("session_search", "session search"),
    };
    let leave = match via {
        Via::NoteSearch => Answer {
            text: String::new(),
            tool_calls: vec![Call {
                name: "note_write".into(),
                arguments: serde_json::json!({"mode": "replace", "name": c.note, "text": left(c)})
                    .to_string(),
            }],
        },
        _ => Answer {
            text: left(c),
            tool_calls: Vec::new(),
        },
    };
    Some(vec![
        rule(
            format!("chain {} {name} sink", c.n),
            c.back_tag(),
            Some(c.canary.clone()),
            send(c),
        ),
        rule(
            format!("chain {} {name}", c.n),
            c.back_tag(),
            None,
            call(tool, "query", &word(c)),
        ),
        rule(
            format!("chain {} sink", c.n),
            c.tag(),
            Some(c.canary.clone()),
            leave,
        ),
        rule(
            format!("chain {} source", c.n),
            c.tag(),
            None,
            super::script::source_answer(c),
        ),
    ])
}

/// Waits until the owner's search finds what search chain `c`'s first session (`session`)
/// left, the canary whole in its snippet: `None` once found (or for a chain of another
/// kind), else why not. Polled through brokerd's admin side, as `bxctl search` asks.
pub fn indexed(
    config: &Config,
    c: &Chain,
    session: Option<&SessionId>,
) -> Result<Option<String>, Error> {
    let Some(via) = via(c).filter(|v| *v != Via::Read) else {
        return Ok(None);
    };
    let (what, kind, name) = match via {
        Via::NoteSearch => ("the note", HitKind::Note, c.note.as_ref()),
        _ => ("the session's words", HitKind::Session, None),
    };
    found(
        config,
        &word(c),
        &c.canary,
        (kind, name, session),
        None,
        what,
    )
}

/// Waits until the owner's search for `query` finds `holding` whole in a hit's snippet, the
/// hit of `kind` and, when given, of the note `name` or of `session`, and in the partition of
/// `label` when given (the indexer moves a document when its label changes: a note
/// relabelled, a session brokerd labels once a call of it ran): `None` once found, else why
/// not (`what` names what was not indexed).
pub fn found(
    config: &Config,
    query: &str,
    holding: &str,
    (kind, name, session): (HitKind, Option<&String>, Option<&SessionId>),
    label: Option<(proto::DataClass, bool)>,
    what: &str,
) -> Result<Option<String>, Error> {
    let start = Instant::now();
    loop {
        let msg = Message::NotesSearch(NotesSearch {
            query: query.to_owned(),
        });
        let found = match crate::admin::call(config, msg)? {
            Message::NotesFound(f) => f.hits,
            other => return Err(crate::error::unexpected(&other)),
        };
        let hit = found.iter().any(|h| {
            h.snippet.contains(holding)
                && label.is_none_or(|l| l == (h.class, h.untrusted))
                && h.kind == kind
                && match kind {
                    HitKind::Note => name.is_none_or(|n| h.name.as_ref() == Some(n)),
                    _ => session.is_none_or(|s| h.session.as_ref() == Some(s)),
                }
        });
        if hit {
            return Ok(None);
        }
        if start.elapsed() >= INDEXED_WITHIN {
            return Ok(Some(format!(
                "the indexer had not indexed {what} after {} s",
                INDEXED_WITHIN.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether the first session of search chain `c` left something to index: the note written
/// (for `note_search`), or the read's canary (for `session_search`, whose model then says
/// it). A chain stopped before that is not waited for: its verdict says where it stopped.
pub fn left_it(c: &Chain, first: &super::session::Played) -> bool {
    let ran = |tool: &str, holding: &str| {
        first.calls.iter().any(|s| {
            s.tool == tool
                && matches!(&s.response, Some(proto::ToolResponse::Result { content, .. }) if content.contains(holding))
        })
    };
    match via(c) {
        Some(Via::NoteSearch) => ran("note_write", ""),
        Some(Via::SessionSearch) => ran(c.source.tool, &c.canary),
        _ => false,
    }
}
