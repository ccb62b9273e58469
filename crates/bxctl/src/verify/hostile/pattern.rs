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

use super::chains::{Chain, READ_FILE};
use super::rewrite::{Left, Rewritten, Scope};

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

/// What a `*` stands for in chain `n`'s file name, `tag` after the number: `""` for the
/// file the chain writes, [`PLANTED`] for the one a write source chain plants beside it.
fn star(n: usize, tag: &str) -> String {
    format!("bxwrite-{n}{tag}")
}

/// What names the file a write source chain plants and changes (`write_source`), apart from
/// the file its untrusted write (`untrusted_write`) makes: `bxwrite-N-planted…`.
pub const PLANTED: &str = "-planted";

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

/// The text the rest of a pattern asks for: each literal, a letter for `?`, `star` for the
/// first `*` and nothing for later ones.
fn render(t: &[Token], star: &str) -> String {
    let mut out = String::new();
    let mut starred = false;
    for token in t {
        match token {
            Token::Literal(c) => out.push(*c),
            Token::One => out.push('x'),
            Token::Star if !starred => {
                out.push_str(star);
                starred = true;
            }
            Token::Star => {}
        }
    }
    out
}

/// A file name `NAME`, its first `*` made `star`, such that `pattern` matches `DIR/NAME`;
/// `Err`: why none.
fn from_one(pattern: &str, dir: &str, star: &str) -> Result<String, String> {
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
        return Err(format!("matches no path in {dir}"));
    }
    let named = |i: &usize| {
        let name = render(&t[*i..], star);
        (!name.is_empty() && !name.contains('/') && name != "." && name != "..").then_some(name)
    };
    // A name of the chain's own (a `*` left to fill) first: no other chain writes it.
    let starred = at.iter().filter(|i| t[**i..].contains(&Token::Star));
    starred
        .chain(at.iter())
        .find_map(named)
        .ok_or_else(|| format!("matches only further down than {dir}/ (a `/` in the name)"))
}

/// The path a chain writes in the granted directory `dir` for a grant of `patterns`, a `*`
/// made `star` (the chain's, [`star`]): one any of them matches (the first that can be
/// made); `Err`: why none can.
fn name(patterns: &[String], dir: &str, star: &str) -> Result<String, String> {
    let mut whys = Vec::new();
    for p in patterns {
        match from_one(p, dir, star) {
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
    written_as(g, path, file, n, "")
}

/// The file a write source chain `n` plants in the granted directory `dir` and changes
/// under write grant `g`, as [`written`] names it but for [`PLANTED`]: never the file the
/// chain's untrusted write makes there.
pub fn planted(g: &Grant, dir: &str, n: usize) -> Result<String, String> {
    written_as(g, dir, false, n, PLANTED)
}

/// [`written`], `tag` after the chain's number in the name.
fn written_as(g: &Grant, path: &str, file: bool, n: usize, tag: &str) -> Result<String, String> {
    let patterns = &g.constraints.patterns;
    let path = match (file, patterns.is_empty()) {
        (true, _) => path.to_owned(),
        (false, true) => return Ok(format!("{path}/bxhostile-{n}{tag}.txt")),
        (false, false) => name(patterns, path, &star(n, tag))?,
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

/// The mode chain `n`'s `write_file` of `path` (named by [`written`]) takes under write
/// grant `g`: a file of the chain's own is new, so `create`, or `append` (which creates an
/// absent file); a granted file, `append`. A mode `g`'s `modes` allow, and no other write
/// grant of its `scope` that denies or asks covers (held as brokerd holds a call against
/// a grant). `Err`: none is left.
pub fn mode(
    g: &Grant,
    scope: &std::collections::BTreeMap<String, Grant>,
    path: &str,
    n: usize,
) -> Result<&'static str, String> {
    use proto::tools::{WriteFileArgs, WriteMode};
    let stopped = |m: WriteMode| {
        let call = ToolArgs::WriteFile(WriteFileArgs {
            content: String::new(),
            mode: m,
            path: path.to_owned(),
        });
        scope.values().any(|o| {
            !std::ptr::eq(o, g)
                && o.tool == "write_file"
                && o.mode != proto::Mode::Auto
                && grants::constraints::check(o, &call).is_ok()
        })
    };
    let allows = |m: WriteMode| {
        (g.constraints.modes.is_empty() || g.constraints.modes.contains(&m)) && !stopped(m)
    };
    if own_name(path, n) && allows(WriteMode::Create) {
        Ok("create")
    } else if allows(WriteMode::Append) {
        Ok("append")
    } else if own_name(path, n) {
        Err(
            "its modes (or a grant denying or asking for some) allow neither create nor \
             append, which a new file needs"
                .into(),
        )
    } else {
        Err(
            "its modes (or a grant denying or asking for some) do not allow append, which a \
             granted file needs"
                .into(),
        )
    }
}

/// Whether chain `c` writes a file of its own: one no other chain writes, so the write
/// creates it.
pub fn own(c: &Chain) -> bool {
    own_name(&c.url, c.n)
}

/// Whether `path`, made by [`written`] for chain `n`, names chain `n`'s own file.
pub fn own_name(path: &str, n: usize) -> bool {
    let name = std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let star = star(n, "");
    [String::new(), PLANTED.to_owned()]
        .iter()
        .any(|tag| name == format!("bxhostile-{n}{tag}.txt"))
        || name
            .match_indices(&star)
            .any(|(at, _)| !name[at + star.len()..].starts_with(|ch: char| ch.is_ascii_digit()))
}

/// The write grants (an ordinary session's, and the jobs') whose patterns the shadow can
/// name no file for under any of their granted paths, and why: not tried (`compare`,
/// `jobs_check`).
pub fn unnamed(r: &Rewritten) -> Vec<Left> {
    let mut out = Vec::new();
    let scopes = [(&r.grants, &r.paths), (&r.jobs, &r.job_paths)];
    for (id, g, grants, paths) in scopes
        .into_iter()
        .flat_map(|(grants, paths)| grants.iter().map(move |(id, g)| (id, g, grants, paths)))
    {
        let write = matches!(g.tool.as_str(), "write_file" | "edit_file");
        if !write || g.mode == proto::Mode::Deny {
            continue;
        }
        // Each reason said where it arises: the patterns', then the modes'.
        let tried: Vec<Result<String, String>> = paths
            .values()
            .filter(|(shadow, _)| g.constraints.paths.contains(&shadow.display().to_string()))
            .map(|(shadow, file)| {
                let path = written(g, &shadow.display().to_string(), *file, 0)
                    .map_err(|e| format!("its patterns name no file the shadow can write: {e}"))?;
                match g.tool.as_str() {
                    "write_file" => mode(g, grants, &path, 0).map(|_| path),
                    _ => Ok(path),
                }
            })
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
            why,
            scope: Scope::Grant,
        });
    }
    out
}

/// What a `*` stands for in the name of a file a read chain reads: `*.txt` names the shared
/// [`READ_FILE`] itself.
const READ_STAR: &str = "bxcanary";

/// Whether `g` names the granted path `dir` or one above it, or names no paths.
fn covers(g: &Grant, dir: &str) -> bool {
    let paths = &g.constraints.paths;
    paths.is_empty()
        || paths
            .iter()
            .any(|root| grants::constraints::is_under(dir, root))
}

/// brokerd's own check of a `read_file` of `path` against `g`'s paths and patterns.
fn reads(g: &Grant, path: &str) -> Result<(), String> {
    let args = ToolArgs::ReadFile(ReadFileArgs {
        path: path.to_owned(),
    });
    grants::constraints::check(g, &args)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The file a `read_file` chain reads in the granted directory `dir` for the read grant `g`
/// with patterns: `DIR/NAME`, the name made from one of its patterns (`*` becoming
/// `bxcanary`) and held against `g` as brokerd holds it; of those, one no deny grant of
/// an ordinary session covers when there is one, so that the chain reads what `g` allows.
/// `Err`: why none can be made.
pub fn read(r: &Rewritten, g: &Grant, dir: &str) -> Result<String, String> {
    let mut whys = Vec::new();
    let mut made = Vec::new();
    for p in &g.constraints.patterns {
        let path = from_one(p, dir, READ_STAR).map(|name| format!("{dir}/{name}"));
        match path.and_then(|path| reads(g, &path).map(|()| path)) {
            Ok(path) => made.push(path),
            Err(why) => whys.push(format!("{p:?} {why}")),
        }
    }
    let denied = |path: &str| {
        r.grants.values().any(|d| {
            d.tool == "read_file"
                && d.mode == proto::Mode::Deny
                && d.job.is_none()
                && reads(d, path).is_ok()
        })
    };
    let free = made.iter().find(|p| !denied(p));
    free.or(made.first())
        .cloned()
        .ok_or_else(|| whys.join("; "))
}

/// The files the `read_file` chains read in the granted directory `dir` besides the shared
/// [`READ_FILE`]: the one [`read`] names for each read grant with patterns covering it,
/// each once, so that no chain reads a file its grant's patterns do not match.
pub fn read_files(r: &Rewritten, dir: &str) -> Vec<String> {
    let shared = format!("{dir}/{READ_FILE}");
    let named: BTreeSet<String> = r
        .grants
        .values()
        .filter(|g| {
            g.tool == "read_file"
                && g.mode != proto::Mode::Deny
                && g.job.is_none()
                && !g.constraints.patterns.is_empty()
                && covers(g, dir)
        })
        .filter_map(|g| read(r, g, dir).ok())
        .filter(|p| *p != shared)
        .collect();
    named.into_iter().collect()
}

/// The read grants of an ordinary session among `unread` (not tried as a source), and why:
/// their patterns name no file the shadow can read under any of their directories.
pub fn unnamed_reads(r: &Rewritten, unread: &BTreeSet<String>) -> Vec<Left> {
    let mut out = Vec::new();
    for (id, g) in &r.grants {
        if g.tool != "read_file" || g.mode == proto::Mode::Deny || !unread.contains(id) {
            continue;
        }
        let whys: Vec<String> = r
            .paths
            .values()
            .filter(|(shadow, file)| !file && covers(g, &shadow.display().to_string()))
            .filter_map(|(shadow, _)| read(r, g, &shadow.display().to_string()).err())
            .collect();
        let why = if whys.is_empty() {
            "it names no directory for the shadow to read in".to_owned()
        } else {
            whys.join("; ")
        };
        out.push(Left {
            grant: id.clone(),
            why: format!("its patterns name no file the shadow can read: {why}"),
            scope: Scope::Grant,
        });
    }
    out
}

/// The grants of an ordinary session with `patterns` whose flows as a source are not tried:
/// all, but a read or listing grant whose patterns match what a chain reads under one of
/// the granted paths (a file [`read`] names in a directory, a granted file, a listed
/// directory), held against it as brokerd holds it.
pub fn unread(r: &Rewritten) -> BTreeSet<String> {
    let read = |g: &Grant| {
        r.paths.values().any(|(shadow, file)| {
            let shadow = shadow.display().to_string();
            let args = match (g.tool.as_str(), file) {
                ("read_file", true) => ToolArgs::ReadFile(ReadFileArgs { path: shadow }),
                ("read_file", false) => return read(r, g, &shadow).is_ok(),
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
