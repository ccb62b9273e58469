//! The `docs` check: every repository path and socket name the docs mention exists.
//!
//! The docs are `README.md` and every tracked `*.md` under `docs/`. What they mention is read
//! from inline code spans (`` `like/this.rs` ``) and link targets (`](like/this.md)`) outside
//! fenced code blocks (which hold commands and output, not references).
//!
//! - **Repository paths.** A mention whose first segment is a top-level directory of the
//!   repository (`crates/…`, `docs/…`, `nix/…`) or a top-level file names that file or
//!   directory, and it exists.
//! - **Source files by name.** A mention ending in `.rs`, `.pml`, `.sh` or `.py`
//!   (`ask/desk.rs`, `start.rs`) is the tail of some tracked file's path: a file that moved
//!   or was split leaves its old name in no doc. (`.nix` is left out: the docs name the
//!   host's `configuration.nix` and nixpkgs' files; the repository's are under `nix/`, which
//!   the first rule checks.) A bare extension (`.rs`) names no file.
//! - **Links.** A relative link target resolves, from the doc's own directory, to a tracked
//!   file or directory.
//! - **Sockets.** A mention ending in `.sock` names a socket file the `config` crate's
//!   `sockets.rs` defines, and when it names the directory too (`chat-loop/loop.sock`), that
//!   directory holds that socket there.
//!
//! A mention with a placeholder (`*`, `<…>`, `{…}`, `$…`, `…`, or a segment in capitals such as
//! `NAME` or `STATE`) names no one path and is not checked; neither is an absolute path (a
//! path on the host, not in the repository) nor a URL.

use std::collections::{BTreeMap, BTreeSet};

/// Where the sockets are defined, relative to the repository root.
pub const SOCKETS_PATH: &str = "crates/config/src/sockets.rs";

/// The file extensions of source files a doc may name by the tail of their path.
const SOURCE_EXTENSIONS: [&str; 4] = [".rs", ".pml", ".sh", ".py"];

/// The docs the check reads: `README.md` and the `*.md` under `docs/`.
pub fn is_doc(path: &str) -> bool {
    path == "README.md" || (path.starts_with("docs/") && path.ends_with(".md"))
}

/// One mention in a doc: its text, and whether it is a link target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub line: usize,
    pub text: String,
    pub link: bool,
}

/// Every inline code span and link target outside fenced code blocks, in order.
pub fn mentions(text: &str) -> Vec<Mention> {
    let mut found = Vec::new();
    let mut fence: Option<&str> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if trimmed.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let number = index + 1;
        for span in code_spans(line) {
            found.push(Mention {
                line: number,
                text: span.to_owned(),
                link: false,
            });
        }
        for target in link_targets(line) {
            found.push(Mention {
                line: number,
                text: target.to_owned(),
                link: true,
            });
        }
    }
    found
}

/// The contents of the inline code spans of one line: a run of n backticks opens a span that
/// the next run of exactly n backticks closes.
fn code_spans(line: &str) -> Vec<&str> {
    let bytes = line.as_bytes();
    let mut spans = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'`' {
            at += 1;
            continue;
        }
        let open = run_length(bytes, at);
        let start = at + open;
        let mut look = start;
        let mut closed = None;
        while look < bytes.len() {
            if bytes[look] == b'`' {
                let run = run_length(bytes, look);
                if run == open {
                    closed = Some(look);
                    break;
                }
                look += run;
            } else {
                look += 1;
            }
        }
        match closed {
            Some(end) => {
                spans.push(line[start..end].trim());
                at = end + open;
            }
            None => break,
        }
    }
    spans
}

fn run_length(bytes: &[u8], from: usize) -> usize {
    bytes[from..].iter().take_while(|&&b| b == b'`').count()
}

/// The targets of the Markdown links of one line (`[text](target)`), outside code spans.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        if !target.is_empty() && !inside_code(line, line.len() - rest.len() + at) {
            targets.push(target);
        }
        rest = &after[end..];
    }
    targets
}

/// Whether byte `at` of `line` lies inside an inline code span (an odd count of backticks
/// before it).
fn inside_code(line: &str, at: usize) -> bool {
    line[..at].bytes().filter(|&b| b == b'`').count() % 2 == 1
}

/// The sockets `sockets.rs` defines: each directory field and the file it joins, and every
/// socket file name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sockets {
    /// `chat-loop` → `loop.sock`, the directory as the default paths spell it.
    pub in_dir: BTreeMap<String, BTreeSet<String>>,
    pub files: BTreeSet<String>,
}

/// Reads `self.FIELD.join("NAME.sock")` and `self.FIELD.join(CONST)` with
/// `pub const CONST: &str = "NAME.sock";` from the text of `sockets.rs`.
pub fn sockets(text: &str) -> Sockets {
    let mut consts = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("pub const ") else {
            continue;
        };
        if let (Some((name, _)), Some(value)) = (rest.split_once(':'), quoted(rest)) {
            consts.insert(name.trim().to_owned(), value.to_owned());
        }
    }
    let mut found = Sockets::default();
    for line in text.lines() {
        let Some(at) = line.find("self.") else {
            continue;
        };
        let rest = &line[at + 5..];
        let Some((field, joined)) = rest.split_once(".join(") else {
            continue;
        };
        let Some(argument) = joined.split(')').next() else {
            continue;
        };
        let file = match quoted(argument) {
            Some(name) => name.to_owned(),
            None => match consts.get(argument.trim()) {
                Some(name) => name.clone(),
                None => continue,
            },
        };
        found.files.insert(file.clone());
        found
            .in_dir
            .entry(field.replace('_', "-"))
            .or_default()
            .insert(file);
    }
    found
}

fn quoted(text: &str) -> Option<&str> {
    let start = text.find('"')? + 1;
    let end = start + text[start..].find('"')?;
    Some(&text[start..end])
}

/// A mention cut to the path it names: without a trailing `:LINE`, `#anchor`, `/` or
/// sentence punctuation, or `None` when it names no one path in the repository.
fn path_of(text: &str) -> Option<&str> {
    let text = text.split('#').next()?;
    let text = text.trim_end_matches(['.', ',', ';', ')']);
    let text = match text.rsplit_once(':') {
        Some((path, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => path,
        _ => text,
    };
    let text = text.trim_end_matches('/');
    let placeholder = text.contains(['*', '<', '>', '{', '}', '$', ' ', '|', '?', '=', '…'])
        || text.split('/').any(|segment| {
            let stem = segment.split('.').next().unwrap_or(segment);
            stem.len() > 1
                && stem
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-')
        });
    let extension = text.starts_with('.') && !text[1..].contains(['.', '/']);
    let foreign = text.is_empty()
        || extension
        || text.starts_with(['/', '~', '-'])
        || text.contains("://")
        || text.starts_with("mailto:");
    (!placeholder && !foreign).then_some(text)
}

/// The repository as the check sees it: every tracked file and every directory above one.
#[derive(Debug)]
pub struct Tree<'a> {
    files: &'a [String],
    dirs: BTreeSet<String>,
    top: BTreeSet<String>,
}

impl<'a> Tree<'a> {
    pub fn new(files: &'a [String]) -> Self {
        let mut dirs = BTreeSet::new();
        let mut top = BTreeSet::new();
        for file in files {
            let mut segments = file.split('/');
            if let Some(first) = segments.next() {
                top.insert(first.to_owned());
            }
            let mut end = 0;
            while let Some(at) = file[end..].find('/') {
                end += at;
                dirs.insert(file[..end].to_owned());
                end += 1;
            }
        }
        Self { files, dirs, top }
    }

    fn exists(&self, path: &str) -> bool {
        self.dirs.contains(path)
            || self
                .files
                .binary_search_by(|f| f.as_str().cmp(path))
                .is_ok()
    }

    fn is_tail(&self, tail: &str) -> bool {
        let tail = tail.trim_start_matches("./");
        self.files
            .iter()
            .any(|f| f == tail || f.ends_with(&format!("/{tail}")))
    }
}

/// The problems of one doc at `path` with `text`, against the repository's files and the
/// sockets `sockets.rs` defines.
pub fn check_doc(path: &str, text: &str, tree: &Tree<'_>, socks: &Sockets) -> Vec<String> {
    let mut problems = Vec::new();
    let here = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    for mention in mentions(text) {
        let Some(named) = path_of(&mention.text) else {
            continue;
        };
        let at = format!("{path}:{}", mention.line);
        if mention.link {
            let missing = resolve(here, named).is_some_and(|resolved| !tree.exists(&resolved));
            if missing {
                problems.push(format!("{at}: links to {named}, which does not exist"));
            }
            continue;
        }
        if named.ends_with(".sock") {
            problems.extend(socket_problem(named, socks).map(|p| format!("{at}: {p}")));
            continue;
        }
        let first = named.split('/').next().unwrap_or(named);
        if named.contains('/') && tree.top.contains(first) {
            if !tree.exists(named) {
                problems.push(format!("{at}: names {named}, which does not exist"));
            }
        } else if SOURCE_EXTENSIONS.iter().any(|ext| named.ends_with(ext)) && !tree.is_tail(named) {
            problems.push(format!(
                "{at}: names {named}, which no tracked file's path ends in"
            ));
        }
    }
    problems
}

/// What is wrong with a socket mention such as `loop.sock` or `chat-loop/loop.sock`.
fn socket_problem(named: &str, socks: &Sockets) -> Option<String> {
    let (dir, file) = match named.rsplit_once('/') {
        Some((dir, file)) => (Some(dir.rsplit('/').next().unwrap_or(dir)), file),
        None => (None, named),
    };
    if !socks.files.contains(file) {
        return Some(format!(
            "names the socket {named}, which {SOCKETS_PATH} does not define"
        ));
    }
    let dir = dir?;
    match socks.in_dir.get(dir) {
        Some(files) if files.contains(file) => None,
        _ => Some(format!(
            "names the socket {named}, but {SOCKETS_PATH} puts no {file} in {dir}"
        )),
    }
}

/// A link target made a repository path from the doc's directory `here`, or `None` when it
/// leaves the repository.
fn resolve(here: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = here.split('/').filter(|s| !s.is_empty()).collect();
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests;
