//! Untrusted content driving a write (docs/verify.md, decisions V25, V37, V50, V54): the
//! chains from each fetch, consult and MCP tool whose answer carries `BXWRITE-TOKEN` ([`plan`]),
//! and from each read, listing, note, program's output and write's result that holds a token
//! the shadow planted ([`from_results`]), to a `write_file` or `edit_file` under each path of
//! each write or edit grant of an ordinary session.

use super::chains::{Chain, Source, Target, canary, url};
use std::collections::BTreeMap;
use std::path::PathBuf;

use proto::Grant;

use super::rewrite::Rewritten;

/// Untrusted content driving a write: each fetch and consult (the sink's answer, which
/// carries `BXWRITE-TOKEN` for the chain's token, untrusted as its grant says), then a
/// `write_file` of what it answered under each path of each write grant of an ordinary
/// session (in a file its patterns match: `pattern`), or an `edit_file` putting it in place of the line
/// [`super::chains::edit_old`] planted there.
/// What the chain wrote is looked for there.
pub fn plan(r: &Rewritten, fetches: &[Target], port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    let writes = ordinary(r);
    // The consults' and the MCP tools' after the fetches', so that those keep their numbers.
    let by = |tool: &'static str| fetches.iter().filter(move |t| t.tool == tool);
    let sources = by("http_fetch")
        .chain(by("consult"))
        .map(|t| (t.tool, t.entry.clone(), t.entry.clone()))
        .chain(
            super::mcp::sources(r)
                .into_iter()
                .map(|s| (s.tool, s.owner, s.path)),
        );
    for (fetch, owner_of, entry) in sources {
        for w in &writes {
            let n = chains.len() + 1;
            let token = canary(nonce, n);
            let source = Source {
                tool: fetch,
                owner: owner_of.clone(),
                path: match fetch {
                    "consult" => format!("{}{token}", super::sink::ASK),
                    "mcp" => entry.clone(),
                    _ => url(&entry, None, port, &token),
                },
            };
            let made = w.chain(n, source, &token, &r.grants);
            chains.extend(made);
        }
    }
}

/// One granted path of an allowing write or edit grant (or a `run` grant's `workdir`):
/// where an untrusted write is tried.
pub(super) struct Write<'a> {
    grant: &'a str,
    g: &'a Grant,
    /// The owner's path.
    owner: &'a str,
    /// The shadow's.
    shadow: String,
    /// Whether it is a file.
    file: bool,
}

impl Write<'_> {
    /// Chain `n`: `source`, whose result holds `token`, then `BXWRITE-TOKEN` written here,
    /// among the grants of `scope` ([`chain`]).
    pub(super) fn chain(
        &self,
        n: usize,
        source: Source,
        token: &str,
        scope: &BTreeMap<String, Grant>,
    ) -> Option<Chain> {
        chain(
            n,
            source,
            token,
            (self.grant, self.g),
            scope,
            self.owner,
            (&self.shadow, self.file),
        )
    }
}

/// The granted paths, among `paths` (the owner's to the shadow's), of each allowing write
/// and edit grant of `grants` (and each `run` grant's `workdir`).
pub(super) fn writes<'a>(
    grants: impl IntoIterator<Item = (&'a String, &'a Grant)>,
    paths: &'a BTreeMap<String, (PathBuf, bool)>,
) -> Vec<Write<'a>> {
    let mut out = Vec::new();
    for (id, g) in grants {
        if !matches!(g.tool.as_str(), "write_file" | "edit_file" | "run")
            || g.mode == proto::Mode::Deny
        {
            continue;
        }
        // A `run` writes in its working directory (H9), a write or an edit under its paths.
        let places = match g.tool.as_str() {
            "run" => g.constraints.workdir.iter().collect::<Vec<_>>(),
            _ => g.constraints.paths.iter().collect(),
        };
        for (owner, (shadow, file)) in paths {
            let shadow = shadow.display().to_string();
            if places.contains(&&shadow) {
                out.push(Write {
                    grant: id,
                    g,
                    owner,
                    shadow,
                    file: *file,
                });
            }
        }
    }
    out
}

/// [`writes`] of an ordinary session.
fn ordinary(r: &Rewritten) -> Vec<Write<'_>> {
    writes(r.grants.iter().filter(|(_, g)| g.job.is_none()), &r.paths)
}

/// Untrusted content from a result the shadow plants driving a write (decision V54): each
/// read and listing of `reads` (its file or its listing holding the chain's token), a note
/// of the chain's own under an allowing `note_read` grant, a listing of the notes (one named
/// by the token) under an allowing `note_list` grant, an append to a note of its own under
/// an allowing `note_write` grant (the token is the note's new hash), a search of the notes
/// or the logs
/// for words holding the token (`search_source`), each allowing `run` grant's
/// program's output (`run_source`) and each write or edit grant's result in each granted
/// directory (`write_source`: the token is its file's new hash), then that token written,
/// as `BXWRITE-TOKEN`, by each write and edit grant under each of its granted paths, as
/// [`plan`] writes a fetch's answer. Numbered after `chains`.
pub fn from_results(r: &Rewritten, reads: &[Source], nonce: &str, chains: &mut Vec<Chain>) {
    let writes = ordinary(r);
    let mut sources: Vec<Planted> = reads
        .iter()
        .filter(|s| matches!(s.tool, "read_file" | "list_dir"))
        .map(|s| Planted::Source(s.clone()))
        .collect();
    sources.push(Planted::Note(r.grants.values().collect()));
    sources.push(Planted::List(r.grants.values().collect()));
    sources.push(Planted::NoteWrite(r.grants.values().collect()));
    sources.extend(["note_search", "session_search"].map(|tool| Planted::Search(r, tool, None)));
    sources.extend(super::run_source::outputs(r).map(Planted::Source));
    let written =
        super::write_source::grants(&r.grants).filter(|(_, g)| super::write_source::plays(g));
    for (_, g) in written {
        for (owner, dir) in super::write_source::dirs(g, &r.paths) {
            sources.push(Planted::Write(g, owner, dir));
        }
    }
    for source in &sources {
        for w in &writes {
            let n = chains.len() + 1;
            let Some((source, token)) = source.of(n, nonce) else {
                continue;
            };
            chains.extend(w.chain(n, source, &token, &r.grants));
        }
    }
}

/// A source whose result holds what the shadow planted for the chain ([`from_results`]).
pub(super) enum Planted<'a> {
    /// A read, a listing or a program's run, the same for every chain (what it plants is
    /// the chain's canary).
    Source(Source),
    /// A note of the chain's own (`note_source`), when one of these grants (an ordinary
    /// session's, or a job's) reads it.
    Note(Vec<&'a Grant>),
    /// A listing of the notes, one named by the chain's token (`note_source`), when a grant
    /// of these lists them.
    List(Vec<&'a Grant>),
    /// An append to a note of the chain's own, its answer holding the note's new hash
    /// (`note_source`), when one of these grants allows it.
    NoteWrite(Vec<&'a Grant>),
    /// A search of the notes or the logs (the tool) for words of the chain's own, which hold
    /// its token (`search_source`), when a grant of these makes it (in a run of the job, when
    /// one is named).
    Search(&'a Rewritten, &'static str, Option<&'a proto::JobName>),
    /// A write or edit grant's result in a granted directory (the owner's path, the
    /// shadow's), in a file of the chain's own (`write_source`).
    Write(&'a Grant, &'a str, String),
}

impl Planted<'_> {
    /// Chain `n`'s source call and the token its result holds; `None`: it has none.
    pub(super) fn of(&self, n: usize, nonce: &str) -> Option<(Source, String)> {
        match self {
            Self::Source(s) => Some((s.clone(), canary(nonce, n))),
            Self::Note(grants) => Some((
                super::note_source::source_of(grants.iter().copied(), n, false)?,
                canary(nonce, n),
            )),
            Self::List(grants) => Some((
                super::note_source::list_source_of(grants.iter().copied(), n, nonce, false)?,
                canary(nonce, n),
            )),
            Self::NoteWrite(grants) => {
                super::note_source::write_source_of(grants.iter().copied(), n, nonce, false)
            }
            Self::Search(r, tool, job) => Some((
                super::search_source::source(r, tool, n, false, *job)?,
                canary(nonce, n),
            )),
            Self::Write(g, owner, dir) => {
                let source = super::write_source::source(g, (owner, dir), n)?;
                let hash = super::write_source::hash(source.tool, n, nonce);
                Some((source, hash))
            }
        }
    }
}

/// Chain `n`: `source`, whose answer carries `BXWRITE-TOKEN` for `token`, then that answer
/// written by write or edit grant `grant` (or a `run` of a grant with a `workdir`, carrying
/// it in its argument, `run::write_target`) under the shadow's `path` of the owner's `owner`
/// (a file when `file`), in a file its patterns match and a mode it allows (among the
/// grants of its `scope`); `None` when it names none (not tried: `pattern::unnamed`).
fn chain(
    n: usize,
    source: Source,
    token: &str,
    (grant, g): (&str, &Grant),
    scope: &BTreeMap<String, Grant>,
    owner: &str,
    (path, file): (&str, bool),
) -> Option<Chain> {
    let canary = format!("{}{token}", super::sink::WRITE);
    // A run in the grant's working directory, its argument carrying the canary (`run`).
    if g.tool == "run" {
        let sink = super::run::write_target(scope, grant, g)?;
        return Some(Chain {
            n,
            source,
            url: super::run::subject(&sink.entry, &canary),
            sink,
            canary,
            note: None,
            restart: None,
            smuggle: None,
            write_mode: None,
        });
    }
    let tool = if g.tool == "edit_file" {
        "edit_file"
    } else {
        "write_file"
    };
    let written = super::pattern::written(g, path, file, n).ok()?;
    let write_mode = match tool {
        "write_file" => Some(super::pattern::mode(g, scope, &written, n).ok()?),
        _ => None,
    };
    Some(Chain {
        n,
        source,
        sink: Target {
            tool,
            grant: grant.to_owned(),
            entry: owner.to_owned(),
            lookalike: None,
        },
        canary,
        url: written,
        note: None,
        restart: None,
        smuggle: None,
        write_mode,
    })
}
