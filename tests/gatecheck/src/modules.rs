//! No two top-level modules of a crate import each other in a circle, and no module and one
//! of its children either ([`nested`]: the child names the parent's own items while the
//! parent names the child's).
//!
//! For every workspace member, the files under its `src/` form a graph of top-level modules:
//! `src/x.rs`, `src/x/mod.rs` and every file under `src/x/` are module `x`. The crate roots
//! (`src/lib.rs`, `src/main.rs`) are no node, since the root declares every module, and the
//! files under `src/bin/` are crate roots of their own and are skipped. Module `a` imports `b`
//! when one of `a`'s files names a path `crate::b...`: in a `use` (`use crate::b::X;`, and
//! each name of a group, `use crate::{b::X, c}`) or anywhere in the code (`crate::b::f()`,
//! `$crate::b` in a macro). A name the root brings in from a module with `use` reaches that
//! module (`pub use error::NetError;` in `lib.rs`, then `crate::NetError` in `net` is an edge
//! `net -> error`); a path to an item defined in the root itself is no edge.
//! Every circle `a -> b -> ... -> a` between distinct modules is a problem that names the
//! lines making each step, unless [`ALLOWED`] lists it with a reason (a parent/child circle
//! as its two modules, `["a::b", "a::b::c"]`).
//!
//! The parsing is text-level, and has these limits:
//! - comments (`//`, `/* */`, doc comments), string literals (raw and byte strings too) and
//!   character literals are blanked before the search, so a path in them is no import;
//! - `super::` and `self::` paths are ignored here: from `src/a/b.rs`, `super::super::c`
//!   reaches module `c` but is not seen (the house writes `crate::c` for that); [`nested`]
//!   follows them within a module;
//! - a name brought in under another name (`use crate::b as other;`, then `other::f()`) counts
//!   once, at its `use`; a glob in the root (`pub use b::*;`) brings in no names this check
//!   knows, and a `use` inside a function of the root counts as one at its top;
//! - `#[path = "..."]` attributes and modules declared inline in the root (`mod x { }`) are
//!   not seen; a path into an inline module of the root counts as an item of the root;
//! - `#[cfg]` is not evaluated: test-only imports count like any other.
//! - only paths are seen, not types: a method that `b` adds to `a`'s type in an `impl` of
//!   its own is called from `a` without naming `b` (the `impl Looper` that once sat in loopd's
//!   `compact.rs`), so that half of a circle is invisible here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::{Check, Error, Outcome};

pub mod nested;
pub mod text;

pub use text::{crate_paths, root_names};

/// Cycles that existed when the rule was written, as (crate, modules from the smallest,
/// reason). Each entry must match a cycle the check finds, so a fixed one is removed here.
pub const ALLOWED: &[Allowed<'static>] = &[];

/// The most cycles reported for one crate; the rest are counted.
const MAX_CYCLES: usize = 20;

/// The part of `cargo metadata --format-version 1 --no-deps` that the check reads.
#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
    workspace_root: String,
}

#[derive(Debug, Deserialize)]
struct Package {
    name: String,
    id: String,
    manifest_path: String,
}

/// The workspace members described by `json` (from `cargo metadata`), as (crate name,
/// directory relative to the workspace root with `/` separators, `""` for the root).
pub fn members(json: &str) -> Result<Vec<(String, String)>, Error> {
    let metadata: Metadata = serde_json::from_str(json).map_err(Error::Metadata)?;
    let root = Path::new(&metadata.workspace_root);
    let mut members: Vec<(String, String)> = metadata
        .packages
        .iter()
        .filter(|package| metadata.workspace_members.contains(&package.id))
        .map(|package| {
            let dir = Path::new(&package.manifest_path)
                .parent()
                .unwrap_or(root)
                .strip_prefix(root)
                .unwrap_or(Path::new(""));
            let dir: Vec<String> = dir
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            (package.name.clone(), dir.join("/"))
        })
        .collect();
    members.sort();
    Ok(members)
}

/// An allowed cycle: (crate, its modules from the smallest, why it stays for now).
pub type Allowed<'a> = (&'a str, &'a [&'a str], &'a str);

/// Checks every crate in `crates` (name, directory relative to `root`), reading its module
/// files from `files`, the repository listing relative to `root`; the cycles in `allowed`
/// pass, and an entry there that matches no cycle is a problem.
pub fn check(
    root: &Path,
    crates: &[(String, String)],
    files: &[String],
    allowed: &[Allowed<'_>],
) -> Result<Outcome, Error> {
    let mut outcome = Outcome {
        check: Check::Modules,
        checked: 0,
        problems: Vec::new(),
    };
    let mut allowed_seen = BTreeSet::new();
    for (name, dir) in crates {
        let src = if dir.is_empty() {
            "src/".to_owned()
        } else {
            format!("{dir}/src/")
        };
        let mut modules: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        let mut roots = Vec::new();
        let mut sources = Vec::new();
        for rel in files {
            let Some(inner) = rel.strip_prefix(&src) else {
                continue;
            };
            let module = module_of(inner);
            let is_root = matches!(inner, "lib.rs" | "main.rs");
            let path = root.join(rel);
            if (module.is_none() && !is_root) || !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            if let Some(module) = nested::module_path(inner) {
                sources.push(nested::Source {
                    rel: rel.clone(),
                    module,
                    text: text.clone(),
                });
            }
            match module {
                Some(module) => modules
                    .entry(module.to_owned())
                    .or_default()
                    .push((rel.clone(), text)),
                None => roots.push(text),
            }
        }
        outcome.checked += modules.len();
        let names: BTreeSet<String> = modules.keys().cloned().collect();
        let mut through_root = BTreeMap::new();
        for text in &roots {
            through_root.extend(root_names(text, &names));
        }
        let graph = graph(&modules, &through_root);
        let (cycles, more) = cycles(&graph);
        for cycle in &cycles {
            if let Some(index) = allowed
                .iter()
                .position(|(krate, allowed, _)| krate == name && allowed == cycle)
            {
                allowed_seen.insert(index);
                continue;
            }
            outcome.problems.push(describe(name, cycle, &graph));
        }
        if more > 0 {
            outcome.problems.push(format!(
                "crate `{name}`: {more} more module cycle(s) not shown"
            ));
        }
        for (pair, problem) in nested::circles(name, &sources) {
            match allowed
                .iter()
                .position(|(krate, allowed, _)| krate == name && *allowed == pair)
            {
                Some(index) => {
                    allowed_seen.insert(index);
                }
                None => outcome.problems.push(problem),
            }
        }
    }
    for (index, (krate, cycle, _)) in allowed.iter().enumerate() {
        let present = crates.iter().any(|(name, _)| name == krate);
        if present && !allowed_seen.contains(&index) {
            outcome.problems.push(format!(
                "crate `{krate}`: allowed module cycle {} no longer exists: remove it from \
                 gatecheck's modules::ALLOWED",
                arrows(cycle)
            ));
        }
    }
    Ok(outcome)
}

/// The top-level module a file under `src/` (given relative to `src/`) belongs to; `None`
/// for the crate roots, `src/bin/` and files that are not Rust.
pub fn module_of(inner: &str) -> Option<&str> {
    if !inner.ends_with(".rs") {
        return None;
    }
    match inner.split_once('/') {
        Some(("bin", _)) => None,
        Some((dir, _)) => Some(dir),
        None => match inner.strip_suffix(".rs") {
            Some("lib" | "main") | None => None,
            Some(stem) => Some(stem),
        },
    }
}

/// For each module, the modules it imports, each with the `file:line` places that do.
type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// The graph of `modules` (each with its files and their text); `through_root` maps the
/// names the crate root brings in to the module they come from.
fn graph(
    modules: &BTreeMap<String, Vec<(String, String)>>,
    through_root: &BTreeMap<String, String>,
) -> Graph {
    let mut graph = Graph::new();
    for (module, files) in modules {
        let edges = graph.entry(module.clone()).or_default();
        for (rel, text) in files {
            for (line, name) in crate_paths(text) {
                let (target, place) = if modules.contains_key(&name) {
                    (&name, format!("{rel}:{line}"))
                } else if let Some(target) = through_root.get(&name) {
                    (target, format!("{rel}:{line} (`crate::{name}`)"))
                } else {
                    continue;
                };
                if target != module {
                    edges.entry(target.clone()).or_default().push(place);
                }
            }
        }
    }
    graph
}

/// Every elementary circle, each once, starting from its smallest module; and how many more
/// there were beyond [`MAX_CYCLES`].
fn cycles(graph: &Graph) -> (Vec<Vec<String>>, usize) {
    let mut found = Vec::new();
    let mut more = 0;
    for start in graph.keys() {
        // Depth-first over modules that sort after `start`, never revisiting one on the
        // current path: every elementary circle through `start` as its smallest member.
        let mut path: Vec<&str> = vec![start];
        let mut stack: Vec<Vec<&str>> = vec![next_of(graph, start, start)];
        while let Some(options) = stack.last_mut() {
            let Some(next) = options.pop() else {
                stack.pop();
                path.pop();
                continue;
            };
            if next == start.as_str() {
                if found.len() < MAX_CYCLES {
                    found.push(path.iter().map(|m| (*m).to_owned()).collect());
                } else {
                    more += 1;
                }
            } else if !path.contains(&next) {
                path.push(next);
                stack.push(next_of(graph, next, start));
            }
        }
    }
    found.sort();
    (found, more)
}

/// The modules `at` imports that a circle from `start` may go through next.
fn next_of<'g>(graph: &'g Graph, at: &str, start: &str) -> Vec<&'g str> {
    graph
        .get(at)
        .into_iter()
        .flat_map(|edges| edges.keys())
        .map(String::as_str)
        .filter(|next| *next >= start)
        .collect()
}

fn arrows(cycle: &[impl AsRef<str>]) -> String {
    let mut names: Vec<String> = cycle.iter().map(|m| format!("`{}`", m.as_ref())).collect();
    if let Some(first) = names.first().cloned() {
        names.push(first);
    }
    names.join(" -> ")
}

fn describe(krate: &str, cycle: &[String], graph: &Graph) -> String {
    let steps: Vec<String> = cycle
        .iter()
        .zip(cycle.iter().cycle().skip(1))
        .map(|(from, to)| {
            let places = graph
                .get(from)
                .and_then(|edges| edges.get(to))
                .map(|places| places.join(", "))
                .unwrap_or_default();
            format!("`{from}` uses `crate::{to}` at {places}")
        })
        .collect();
    format!(
        "crate `{krate}`: modules {} import each other in a circle ({}); move what they \
         share to the module that owns it",
        arrows(cycle),
        steps.join("; ")
    )
}

#[cfg(test)]
mod tests;
