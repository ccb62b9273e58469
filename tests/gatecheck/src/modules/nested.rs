//! Parent/child circles: a module whose own file names an item of one of its children (in a
//! `use`, a `pub use` that makes the child's item its own, or a path `child::f()`), while
//! that child, or a module below it, names an item the parent's own file defines
//! (`super::Shared`, `super::super::f()`, `crate::a::Shared`). The child then cannot be read
//! without its parent, nor the parent without the child: what they share belongs in a module
//! of its own that both import (a sibling of the child), or in the one that owns it.
//!
//! Each file under `src/` is a module: `a.rs` and `a/mod.rs` are `a`, `a/b.rs` and
//! `a/b/mod.rs` are `a::b`, the crate roots (`lib.rs`, `main.rs`) are the crate itself
//! (`crate`), and `src/bin/` is skipped. The crate itself is no parent here, as it is no
//! node of the top-level check: it declares every module, and what it defines (a crate-wide
//! `Error`, say) is the crate's. A test module (a module named `tests`, compiled for tests
//! only and imported by nothing) may name what is above it: a test of a part often builds
//! the whole. A path is followed through the modules it names;
//! a name a module brings in with `use` is followed to the module that defines it, so a
//! parent's `pub use child::X` makes `super::X` a use of the child, not of the parent. An
//! item is what a file defines outside any block: `fn`, `struct`, `enum`, `union`, `trait`,
//! `type`, `const`, `static`, `macro_rules!`.
//!
//! The reading is the same text-level one as the top-level check's, with its limits
//! (comments and literals blanked, `#[path]` and `#[cfg]` not evaluated, globs bring in
//! nothing known). Besides: a module declared inline (`mod tests { … }`) is read as part of
//! its file, and its `super::` is that file's module; methods are not seen (a child's
//! `impl Parent { … }` names the parent's type, but the parent calls its methods without
//! naming the child).

use std::collections::{BTreeMap, BTreeSet};

use super::text::blank_comments_and_literals;

/// A module path from the crate root: empty for the crate itself.
type ModPath = Vec<String>;

/// One file of a crate: its path in the repository, its module and its text.
#[derive(Debug)]
pub struct Source {
    pub rel: String,
    pub module: ModPath,
    pub text: String,
}

/// The module a file under `src/` (given relative to `src/`) is, or `None` for `src/bin/`
/// and files that are not Rust.
pub fn module_path(inner: &str) -> Option<ModPath> {
    let stem = inner.strip_suffix(".rs")?;
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if parts.first().is_some_and(|p| p == "bin") && parts.len() > 1 {
        return None;
    }
    match parts.last().map(String::as_str) {
        Some("mod") => {
            parts.pop();
        }
        Some("lib" | "main") if parts.len() == 1 => parts.clear(),
        _ => {}
    }
    Some(parts)
}

/// `crate::a::b` for a person.
pub fn show(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// The tokens of `text` with their 1-based lines, comments and literals left out.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let code: Vec<char> = blank_comments_and_literals(text).chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < code.len() {
        let c = code[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let end = (i..code.len())
                .find(|&k| !(code[k].is_alphanumeric() || code[k] == '_'))
                .unwrap_or(code.len());
            out.push((Tok::Ident(code[i..end].iter().collect()), line));
            i = end;
        } else if c == ':' && code.get(i + 1) == Some(&':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push((Tok::Punct(c), line));
            }
            i += 1;
        }
    }
    out
}

/// What one file says: the children it declares, the items it defines, the names its `use`
/// brings in, and every path it names (with the module it is named in, and its line).
#[derive(Debug, Default)]
struct Reading {
    children: BTreeSet<String>,
    items: BTreeSet<String>,
    imports: BTreeMap<String, Vec<String>>,
    paths: Vec<(ModPath, Vec<String>, usize)>,
}

const ITEMS: &[&str] = &[
    "fn", "struct", "enum", "union", "trait", "type", "const", "static",
];

fn read(module: &[String], text: &str) -> Reading {
    let toks = tokens(text);
    let mut r = Reading::default();
    let mut depth = 0usize;
    // Inline modules open at a depth: (name, the depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let ident = |k: usize| match toks.get(k) {
        Some((Tok::Ident(w), _)) => Some(w.as_str()),
        _ => None,
    };
    let mut i = 0;
    while i < toks.len() {
        let here: ModPath = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        let top = depth == 0;
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(i + 1) {
                    match toks.get(i + 2).map(|t| &t.0) {
                        Some(Tok::Punct(';')) if top && inline.is_empty() => {
                            r.children.insert(name.to_owned());
                        }
                        Some(Tok::Punct('{')) => {
                            depth += 1;
                            inline.push((name.to_owned(), depth));
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Tok::Ident(w) if w == "use" => {
                let mut leaves = Vec::new();
                let end = use_tree(&toks, i + 1, Vec::new(), &mut leaves);
                for (path, name, line) in leaves {
                    if top && inline.is_empty() && name != "_" {
                        r.imports.insert(name, path.clone());
                    }
                    r.paths.push((here.clone(), path, line));
                }
                i = end;
                continue;
            }
            Tok::Ident(w) if w == "macro_rules" && top && inline.is_empty() => {
                if let (Some((Tok::Punct('!'), _)), Some(name)) = (toks.get(i + 1), ident(i + 2)) {
                    r.items.insert(name.to_owned());
                }
            }
            Tok::Ident(w) if ITEMS.contains(&w.as_str()) && top && inline.is_empty() => {
                let mut k = i + 1;
                if ident(k) == Some("mut") {
                    k += 1;
                }
                if let Some(name) = ident(k)
                    && !ITEMS.contains(&name)
                    && !matches!(name, "unsafe" | "async" | "extern" | "_")
                {
                    r.items.insert(name.to_owned());
                }
            }
            Tok::Ident(first) => {
                let after_sep = i > 0 && toks[i - 1].0 == Tok::PathSep;
                if !after_sep && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep) {
                    let dollar = i > 0 && toks[i - 1].0 == Tok::Punct('$');
                    let mut path = vec![if dollar && first == "crate" {
                        "crate".to_owned()
                    } else {
                        first.clone()
                    }];
                    let line = toks[i].1;
                    let mut k = i + 1;
                    while toks.get(k).map(|t| &t.0) == Some(&Tok::PathSep) {
                        match ident(k + 1) {
                            Some(next) => path.push(next.to_owned()),
                            None => break,
                        }
                        k += 2;
                    }
                    r.paths.push((here, path, line));
                    i = k;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    r
}

/// Reads the use tree at `toks[i..]` under `prefix`, pushing (full path, name brought in,
/// line) for each leaf; returns the index after it (after the `;` at the top).
fn use_tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    mut prefix: Vec<String>,
    leaves: &mut Vec<(Vec<String>, String, usize)>,
) -> usize {
    let top = prefix.is_empty();
    let finish = |i: usize| {
        if top && matches!(toks.get(i), Some((Tok::Punct(';'), _))) {
            i + 1
        } else {
            i
        }
    };
    if toks.get(i).map(|t| &t.0) == Some(&Tok::PathSep) {
        i += 1;
    }
    loop {
        match toks.get(i) {
            Some((Tok::Ident(name), line)) => {
                prefix.push(name.clone());
                let line = *line;
                i += 1;
                if toks.get(i).map(|t| &t.0) == Some(&Tok::PathSep) {
                    i += 1;
                    continue;
                }
                let mut bound = name.clone();
                if let (Some((Tok::Ident(a), _)), Some((Tok::Ident(alias), _))) =
                    (toks.get(i), toks.get(i + 1))
                    && a == "as"
                {
                    bound = alias.clone();
                    i += 2;
                }
                if name == "self" {
                    prefix.pop();
                    if bound == "self" {
                        bound = prefix.last().cloned().unwrap_or_default();
                    }
                }
                leaves.push((prefix, bound, line));
                return finish(i);
            }
            Some((Tok::Punct('{'), _)) => {
                i += 1;
                while !matches!(toks.get(i), None | Some((Tok::Punct('}'), _))) {
                    i = use_tree(toks, i, prefix.clone(), leaves);
                    if matches!(toks.get(i), Some((Tok::Punct(','), _))) {
                        i += 1;
                    } else {
                        break;
                    }
                }
                return finish(i + 1);
            }
            // A glob brings in names this reading does not know.
            Some((Tok::Punct('*'), _)) => return finish(i + 1),
            _ => return finish(i),
        }
    }
}

/// A crate's modules as read: each module's reading, by module path.
struct Crate {
    modules: BTreeMap<ModPath, Reading>,
}

/// Where a path leads: the module that defines what it names, and whether it names an item
/// that module's own file defines (`false`: it names the module itself).
struct Target {
    module: ModPath,
    own_item: bool,
}

impl Crate {
    fn is_module(&self, m: &[String]) -> bool {
        self.modules.contains_key(m)
            || m.split_last().is_some_and(|(last, parent)| {
                self.modules
                    .get(parent)
                    .is_some_and(|r| r.children.contains(last))
            })
    }

    /// Where `path`, named in module `at`, leads; `None` outside the crate (another crate,
    /// a local name, a glob).
    fn resolve(&self, at: &[String], path: &[String], hops: usize) -> Option<Target> {
        let (mut base, rest): (ModPath, &[String]) = match path.first()?.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (at.to_vec(), &path[1..]),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                (at[..at.len().checked_sub(ups)?].to_vec(), &path[ups..])
            }
            first => {
                let child: ModPath = at.iter().cloned().chain([first.to_owned()]).collect();
                if !self.is_module(&child) {
                    return None;
                }
                (child, &path[1..])
            }
        };
        let mut rest = rest.iter();
        let item = loop {
            match rest.next() {
                None => break None,
                Some(seg) => {
                    let next: ModPath = base.iter().cloned().chain([seg.clone()]).collect();
                    if self.is_module(&next) {
                        base = next;
                    } else {
                        break Some(seg);
                    }
                }
            }
        };
        let Some(item) = item else {
            return Some(Target {
                module: base,
                own_item: false,
            });
        };
        let reading = self.modules.get(&base)?;
        if reading.items.contains(item) {
            return Some(Target {
                module: base,
                own_item: true,
            });
        }
        // A name the module brings in: followed to where it comes from.
        let from = reading.imports.get(item)?;
        if hops == 0 {
            return None;
        }
        self.resolve(&base, from, hops - 1)
    }
}

/// Every parent/child circle in the crate `files`, as (the pair's modules shown, parent
/// first, and the problem to report).
pub fn circles(krate: &str, files: &[Source]) -> Vec<(Vec<String>, String)> {
    let mut modules = BTreeMap::new();
    let mut places: Vec<(&Source, ModPath, Vec<String>, usize)> = Vec::new();
    for file in files {
        let reading = read(&file.module, &file.text);
        for (at, path, line) in &reading.paths {
            places.push((file, at.clone(), path.clone(), *line));
        }
        // Both crate roots are the crate: what either declares, defines or brings in.
        let entry: &mut Reading = modules.entry(file.module.clone()).or_default();
        entry.children.extend(reading.children);
        entry.items.extend(reading.items);
        entry.imports.extend(reading.imports);
    }
    let krate_modules = Crate { modules };
    // (parent, child) -> (places where the child side uses the parent's own items, places
    // where the parent names the child's).
    type Places = (Vec<String>, Vec<String>);
    let mut pairs: BTreeMap<(ModPath, ModPath), Places> = BTreeMap::new();
    for (file, at, path, line) in places {
        if at.iter().any(|m| m == "tests") {
            continue;
        }
        let Some(target) = krate_modules.resolve(&at, &path, 8) else {
            continue;
        };
        let (from, to) = (&file.module, &target.module);
        let place = format!("{}:{line} (`{}`)", file.rel, path.join("::"));
        if to.len() < from.len() && from.starts_with(to) && target.own_item && !to.is_empty() {
            let child = from[..=to.len()].to_vec();
            pairs.entry((to.clone(), child)).or_default().0.push(place);
        } else if from.len() < to.len() && to.starts_with(from) && !from.is_empty() {
            let child = to[..=from.len()].to_vec();
            pairs
                .entry((from.clone(), child))
                .or_default()
                .1
                .push(place);
        }
    }
    pairs
        .into_iter()
        .filter(|(_, (up, down))| !up.is_empty() && !down.is_empty())
        .map(|((parent, child), (up, down))| {
            let (p, c) = (show(&parent), show(&child));
            let problem = format!(
                "crate `{krate}`: module `{p}` and its child `{c}` import each other (`{c}` \
                 uses `{p}`'s own items at {}; `{p}` names `{c}`'s at {}); move what they \
                 share into a module of its own beside `{c}`, or into the one that owns it",
                up.join(", "),
                down.join(", ")
            );
            (vec![p, c], problem)
        })
        .collect()
}
