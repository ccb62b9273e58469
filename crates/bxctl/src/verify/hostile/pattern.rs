//! The file an untrusted-write chain writes, named so that its write grant's `patterns`
//! match it (docs/decisions.md V37). brokerd holds a `write_file` or `edit_file` call's
//! normalised path, whole, against the grant's patterns (`grants::constraints`: `*` any run
//! of characters, `/` included, `?` one character, `\*`, `\?`, `\\` themselves, any one
//! pattern enough). The shadow writes a file directly in a granted directory: the name is
//! made from a pattern, `*` becoming `bxwrite-N` (chain `N`'s own), `?` a letter, a literal
//! itself, after the part of the pattern the directory's path takes up. A pattern no such
//! name matches (one naming the owner's own paths, which the shadow moved; one wanting a
//! `/` below the directory) is given up, and said: the grant is then `not tried`.

use std::collections::BTreeSet;

use proto::Grant;
use proto::tools::{EditFileArgs, ListDirArgs, ReadFileArgs, ToolArgs};

use super::chains::Chain;
use super::rewrite::{Left, Rewritten};

/// One element of a pattern, as brokerd reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `?`: exactly one character.
    One,
    /// `*`: any run of characters.
    Star,
}

/// A pattern's tokens; `Err` for one brokerd refuses at load (it never gets this far).
fn tokens(pattern: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '*' => Token::Star,
            '?' => Token::One,
            '\\' => match chars.next() {
                Some(e @ ('*' | '?' | '\\')) => Token::Literal(e),
                _ => return Err("is not a pattern brokerd loads".into()),
            },
            other => Token::Literal(other),
        });
    }
    Ok(out)
}

/// What a `*` stands for in chain `n`'s file name.
fn star(n: usize) -> String {
    format!("bxwrite-{n}")
}

/// The positions in `t` reached from `at` without a character: past each `*`.
fn closure(t: &[Token], mut at: BTreeSet<usize>) -> BTreeSet<usize> {
    let stars: Vec<usize> = at.iter().copied().collect();
    let mut todo = stars;
    while let Some(i) = todo.pop() {
        if t.get(i) == Some(&Token::Star) && at.insert(i + 1) {
            todo.push(i + 1);
        }
    }
    at
}

/// The text the rest of a pattern asks for: each literal, a letter for `?`, [`star`] for
/// the first `*` and nothing for later ones.
fn render(t: &[Token], n: usize) -> String {
    let mut out = String::new();
    let mut starred = false;
    for token in t {
        match token {
            Token::Literal(c) => out.push(*c),
            Token::One => out.push('x'),
            Token::Star if !starred => {
                out.push_str(&star(n));
                starred = true;
            }
            Token::Star => {}
        }
    }
    out
}

/// A file name `NAME` for chain `n` such that `pattern` matches `DIR/NAME`; `Err`: why none.
fn from_one(pattern: &str, dir: &str, n: usize) -> Result<String, String> {
    let t = tokens(pattern)?;
    let mut at = closure(&t, BTreeSet::from([0]));
    for ch in format!("{dir}/").chars() {
        let next = at
            .iter()
            .filter_map(|&i| match t.get(i) {
                Some(Token::Star) => Some(i),
                Some(Token::One) => Some(i + 1),
                Some(Token::Literal(c)) if *c == ch => Some(i + 1),
                _ => None,
            })
            .collect();
        at = closure(&t, next);
    }
    if at.is_empty() {
        let moved = if pattern.starts_with('/') {
            " (the shadow moves a grant's paths, not its patterns)"
        } else {
            ""
        };
        return Err(format!("matches no path in {dir}{moved}"));
    }
    let named = |i: &usize| {
        let name = render(&t[*i..], n);
        (!name.is_empty() && !name.contains('/') && name != "." && name != "..").then_some(name)
    };
    // A name of the chain's own (a `*` left to fill) first: no other chain writes it.
    let starred = at.iter().filter(|i| t[**i..].contains(&Token::Star));
    starred
        .chain(at.iter())
        .find_map(named)
        .ok_or_else(|| format!("matches only further down than {dir}/ (a `/` in the name)"))
}

/// The path chain `n` writes in the granted directory `dir` for a grant of `patterns`: one
/// any of them matches (the first that can be made); `Err`: why none can.
pub fn name(patterns: &[String], dir: &str, n: usize) -> Result<String, String> {
    let mut whys = Vec::new();
    for p in patterns {
        match from_one(p, dir, n) {
            Ok(name) => return Ok(format!("{dir}/{name}")),
            Err(why) => whys.push(format!("{p:?} {why}")),
        }
    }
    Err(whys.join("; "))
}

/// The path chain `n` writes under the shadow's granted `path` (a file when `file`) for
/// write grant `g`: the file itself, or a new file in the directory (`bxhostile-N.txt`
/// without patterns, [`name`] with), held against the grant as brokerd holds it; `Err`:
/// why no path the grant covers can be written.
pub fn written(g: &Grant, path: &str, file: bool, n: usize) -> Result<String, String> {
    let patterns = &g.constraints.patterns;
    let path = match (file, patterns.is_empty()) {
        (true, _) => path.to_owned(),
        (false, true) => return Ok(format!("{path}/bxhostile-{n}.txt")),
        (false, false) => name(patterns, path, n)?,
    };
    // brokerd's own check of paths and patterns (an edit's: a write's adds only `modes`).
    let edit = Grant {
        tool: "edit_file".into(),
        ..g.clone()
    };
    let args = ToolArgs::EditFile(EditFileArgs {
        new: String::new(),
        old: String::new(),
        path: path.clone(),
    });
    match grants::constraints::check(&edit, &args) {
        Ok(_) => Ok(path),
        Err(e) => Err(e.to_string()),
    }
}

/// Whether chain `c` writes a file of its own: one no other chain writes, so the write
/// creates it.
pub fn own(c: &Chain) -> bool {
    let name = std::path::Path::new(&c.url)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let star = star(c.n);
    name == format!("bxhostile-{}.txt", c.n)
        || name
            .match_indices(&star)
            .any(|(at, _)| !name[at + star.len()..].starts_with(|ch: char| ch.is_ascii_digit()))
}

/// The write grants of an ordinary session whose patterns the shadow can name no file for
/// under any of their granted paths, and why: not tried (`compare`).
pub fn unnamed(r: &Rewritten) -> Vec<Left> {
    let mut out = Vec::new();
    for (id, g) in &r.grants {
        let write = matches!(g.tool.as_str(), "write_file" | "edit_file");
        if !write || g.mode == proto::Mode::Deny || g.job.is_some() {
            continue;
        }
        if g.constraints.patterns.is_empty() {
            continue;
        }
        let tried: Vec<Result<String, String>> = r
            .paths
            .values()
            .filter(|(shadow, _)| g.constraints.paths.contains(&shadow.display().to_string()))
            .map(|(shadow, file)| written(g, &shadow.display().to_string(), *file, 0))
            .collect();
        if tried.iter().any(Result::is_ok) {
            continue;
        }
        let whys: Vec<String> = tried.into_iter().filter_map(Result::err).collect();
        let why = if whys.is_empty() {
            "it names no path for the shadow to write in".to_owned()
        } else {
            whys.join("; ")
        };
        out.push(Left {
            grant: id.clone(),
            why: format!("its patterns name no file the shadow can write: {why}"),
        });
    }
    out
}

/// The grants of an ordinary session with `patterns` whose flows as a source are not tried:
/// all, but a read or listing grant whose patterns match what a chain reads under one of
/// the granted paths (a directory's [`READ_FILE`](super::chains::READ_FILE), a granted
/// file, a listed directory), held against it as brokerd holds it.
pub fn unread(r: &Rewritten) -> BTreeSet<String> {
    let read = |g: &Grant| {
        r.paths.values().any(|(shadow, file)| {
            let shadow = shadow.display().to_string();
            let args = match (g.tool.as_str(), file) {
                ("read_file", true) => ToolArgs::ReadFile(ReadFileArgs { path: shadow }),
                ("read_file", false) => ToolArgs::ReadFile(ReadFileArgs {
                    path: format!("{shadow}/{}", super::chains::READ_FILE),
                }),
                ("list_dir", false) => ToolArgs::ListDir(ListDirArgs { path: shadow }),
                _ => return false,
            };
            grants::constraints::check(g, &args).is_ok()
        })
    };
    r.grants
        .iter()
        .filter(|(_, g)| !g.constraints.patterns.is_empty() && !read(g))
        .map(|(id, _)| id.clone())
        .collect()
}

#[cfg(test)]
#[path = "pattern_tests.rs"]
mod tests;
