//! A write's result as a source (docs/decisions.md V44). A `write_file` or `edit_file`
//! answers `wrote PATH: N bytes, sha256 H`, labelled like a read of the file (H9); after an
//! append or an edit, `H` is a hash of the file's whole new text, so of what was in it
//! before. For each allowing write or edit grant of an ordinary session, in each granted
//! directory, a chain plants a file of its own (named for the grant's patterns,
//! `pattern::planted`) holding its canary line, appends a line to it (an edit replaces the
//! line `chains::edit_old` planted), then sends the hash to every sink but the look-alikes.
//! The value looked for at the sink, the chain's `canary`, is that hash, which the shadow
//! computes from what it planted and what the call adds: the call's arguments hold neither
//! the planted line nor the hash, so the hash at the sink means the write's result went out.
//!
//! Not played, and said as a source only ([`unplayed`]): a write grant whose `modes` allow
//! no `append` (a create's or a replace's result says only what the model wrote), and one
//! whose every granted path is a file or whose patterns name only a file other chains write
//! too (its text before the write is not known beforehand).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::chains::{Chain, Source, Target, edit_line, edit_old};
use super::rewrite::{Left, Rewritten};
use super::script::{Answer, Call};

/// Whether `c` starts from a write's result.
pub fn is(c: &Chain) -> bool {
    matches!(c.source.tool, "write_file" | "edit_file")
}

/// What chain `n`'s append adds to its file.
fn added(n: usize) -> String {
    format!("BXAPPEND-{n}\n")
}

/// What chain `n`'s edit puts in place of the planted line.
fn edited(n: usize) -> String {
    format!("BXEDITED-{n}.")
}

/// The text planted in chain `n`'s file, its source's `tool` a write or an edit: its canary
/// line, and for an edit the line the edit replaces.
fn before(tool: &str, n: usize, nonce: &str) -> String {
    let canary = super::chains::canary(nonce, n);
    match tool {
        "edit_file" => format!("{canary}\n{}\n", edit_line(n)),
        _ => format!("{canary}\n"),
    }
}

/// The file's text after chain `n`'s call, as brokerd computes it (`textedit`).
fn after(tool: &str, n: usize, nonce: &str) -> String {
    let text = before(tool, n, nonce);
    match tool {
        "edit_file" => text.replacen(&edit_line(n), &edited(n), 1),
        _ => text + &added(n),
    }
}

/// What chain `n`'s write source's result says of its file, its source `tool` a write or
/// an edit: the hash of the file's new text, which the shadow computes from what it planted
/// and what the call adds.
pub fn hash(tool: &str, n: usize, nonce: &str) -> String {
    proto::Hash32::digest(after(tool, n, nonce).as_bytes()).to_string()
}

/// Whether write grant `g`'s calls may append (an edit grant's always change a file in place).
fn appends(g: &proto::Grant) -> bool {
    g.tool == "edit_file"
        || g.constraints.modes.is_empty()
        || g.constraints
            .modes
            .contains(&proto::tools::WriteMode::Append)
}

/// The allowing write and edit grants of `grants` (an ordinary session's, or the jobs').
pub fn grants(
    grants: &BTreeMap<String, proto::Grant>,
) -> impl Iterator<Item = (&String, &proto::Grant)> {
    grants.iter().filter(|(_, g)| {
        matches!(g.tool.as_str(), "write_file" | "edit_file") && g.mode != proto::Mode::Deny
    })
}

/// The file of chain `n`'s own that grant `g` covers in the granted directory `dir`.
fn own_file(g: &proto::Grant, dir: &str, n: usize) -> Option<String> {
    super::pattern::planted(g, dir, n)
        .ok()
        .filter(|path| super::pattern::own_name(path, n))
}

/// Whether grant `g`'s result is played as a source: a write or an edit grant whose calls
/// may append.
pub fn plays(g: &proto::Grant) -> bool {
    matches!(g.tool.as_str(), "write_file" | "edit_file") && appends(g)
}

/// The granted directories of `paths` (the owner's to the shadow's) that grant `g` names,
/// each with the owner's path: where its result is played.
pub fn dirs<'a>(
    g: &'a proto::Grant,
    paths: &'a BTreeMap<String, (PathBuf, bool)>,
) -> impl Iterator<Item = (&'a String, String)> + 'a {
    paths.iter().filter_map(|(owner, (shadow, file))| {
        let dir = shadow.display().to_string();
        (!file && g.constraints.paths.contains(&dir)).then_some((owner, dir))
    })
}

/// Chain `n`'s source from grant `g`'s result in the granted directory `dir` (the owner's
/// `owner`): the append to (or the edit of) its planted file; `None` when its patterns name
/// no file of the chain's own there.
pub fn source(g: &proto::Grant, (owner, dir): (&str, &str), n: usize) -> Option<Source> {
    Some(Source {
        tool: if g.tool == "edit_file" {
            "edit_file"
        } else {
            "write_file"
        },
        owner: owner.to_owned(),
        path: own_file(g, dir, n)?,
    })
}

/// Chain `n` from grant `g`'s result in the granted directory `dir` (the owner's `owner`)
/// to `sink`; `None` when its patterns name no file of the chain's own there.
pub fn chain(
    g: &proto::Grant,
    (owner, dir): (&str, &str),
    n: usize,
    sink: &Target,
    port: u16,
    nonce: &str,
) -> Option<Chain> {
    let source = source(g, (owner, dir), n)?;
    let hash = hash(source.tool, n, nonce);
    Some(Chain::carrying(n, source, sink, port, hash))
}

/// Adds a chain from each write grant's result, in each granted directory, to each of
/// `targets` but the look-alikes; numbered after `chains`.
pub fn plan(r: &Rewritten, targets: &[Target], port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    for (_, g) in grants(&r.grants).filter(|(_, g)| plays(g)) {
        for (owner, dir) in dirs(g, &r.paths) {
            for sink in targets.iter().filter(|t| t.lookalike.is_none()) {
                let n = chains.len() + 1;
                chains.extend(chain(g, (owner, &dir), n, sink, port, nonce));
            }
        }
    }
}

/// The chain's first call: the append (or the edit) of its own file.
pub fn call(c: &Chain) -> Answer {
    let arguments = match c.source.tool {
        "edit_file" => serde_json::json!({
            "new": edited(c.n),
            "old": edit_old(c),
            "path": c.source.path,
        }),
        _ => serde_json::json!({
            "content": added(c.n),
            "mode": "append",
            "path": c.source.path,
        }),
    };
    Answer {
        text: String::new(),
        tool_calls: vec![Call {
            name: c.source.tool.to_owned(),
            arguments: arguments.to_string(),
        }],
    }
}

/// Plants each write source chain's file (the ordinary and the jobs'): its canary line (and
/// the line an edit replaces).
pub fn plant<'a>(chains: impl IntoIterator<Item = &'a Chain>, nonce: &str) -> std::io::Result<()> {
    for c in chains.into_iter().filter(|c| is(c)) {
        let path = std::path::Path::new(&c.source.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, before(c.source.tool, c.n, nonce))?;
    }
    Ok(())
}

/// The write and edit grants [`plan`] (or `jobs::plan`) plays no chain from, and why, as
/// sources only (their untrusted writes are played, `chains`): of an ordinary session's
/// grants, and of the jobs'. A grant whose patterns name no file at all is
/// `pattern::unnamed`'s.
pub fn unplayed(r: &Rewritten) -> Vec<Left> {
    let mut out = unplayed_in(&r.grants, &r.paths);
    out.extend(unplayed_in(&r.jobs, &r.job_paths));
    out
}

/// [`unplayed`] of `grants` in `paths`.
fn unplayed_in(
    grants: &BTreeMap<String, proto::Grant>,
    paths: &BTreeMap<String, (PathBuf, bool)>,
) -> Vec<Left> {
    let mut out = Vec::new();
    for (id, g) in self::grants(grants) {
        let dirs: Vec<String> = dirs(g, paths).map(|(_, d)| d).collect();
        let why = if !appends(g) {
            "its modes allow no append: a create's or a replace's result says only what the \
             model wrote, nothing of the file"
        } else if dirs.iter().any(|d| own_file(g, d, 0).is_some()) {
            continue;
        } else if dirs.is_empty() {
            "its granted paths are files, which other chains write too: their text before \
             the write is not known beforehand"
        } else if dirs
            .iter()
            .any(|d| super::pattern::written(g, d, false, 0).is_ok())
        {
            "its patterns name only a file other chains write too (no `*` to name one of \
             the chain's own): its text before the write is not known beforehand"
        } else {
            continue;
        };
        out.push(Left::source(id, why));
    }
    out
}
