//! Grant constraints: what `paths`, `hosts`, `patterns`, `private_networks` and the hands'
//! keys (`hands.rs`) mean, for each tool. The rules are written for owners in `docs/grants.md`; this module is their
//! only implementation.
//!
//! Pure functions over strings: brokerd runs sandboxed and may not see the owner's files,
//! and a decision must not depend on what the file system looks like at the moment.

mod error;
mod hands;
mod host;
pub mod mcp;
mod mcp_error;
mod mismatch;
mod path;
mod pattern;
mod program;
mod reach;
mod subject;

use proto::Grant;
use proto::Mode;
use proto::tools::ToolArgs;

pub use error::{HostError, InvalidGrant, LabelError, PathError, PatternError, UrlError};
pub use hands::{HandsError, LIMITS};
pub use host::{Host, normalize_url};
pub use mcp_error::{ArgMismatch, McpGrantError};
pub use mismatch::Mismatch;
pub use path::{is_under, normalize_path};
pub use program::{LAUNCHERS, is_launcher};
pub use reach::{Place, Reach, Unreachable, Zone, admit, place};
pub use subject::Subject;

use host::Entry;
use pattern::Pattern;

/// What a call looks like once its grant covers it: the normalised values the tool must use,
/// so that what was checked is what runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Covered {
    /// `read_file`, `list_dir`, `write_file`, `edit_file`: the normalised path.
    pub path: Option<String>,
    /// `http_fetch`: the URL's host, the one to resolve and let through.
    pub host: Option<Host>,
    /// `http_fetch`: the normalised URL, the one to fetch.
    pub url: Option<url::Url>,
}

fn subject_of(tool: &str) -> Result<Subject, InvalidGrant> {
    match tool {
        "read_file" | "list_dir" | "write_file" | "edit_file" => Ok(Subject::Path),
        "run" => Ok(Subject::Program),
        "http_fetch" => Ok(Subject::Url),
        "consult" => Ok(Subject::Prompt),
        "note_write" | "note_read" | "note_list" | "note_search" | "session_search" => {
            Ok(Subject::Note)
        }
        other if other.starts_with(mcp::PREFIX) => Ok(Subject::Mcp),
        other => Err(InvalidGrant::UnknownTool {
            tool: other.to_owned(),
        }),
    }
}

/// What `tool`'s calls are matched as, when boxmaker knows the tool.
pub fn subject(tool: &str) -> Option<Subject> {
    subject_of(tool).ok()
}

/// Load-time check of one grant's constraints for its tool.
pub fn validate(grant: &Grant) -> Result<(), InvalidGrant> {
    let subject = subject_of(&grant.tool)?;
    let tool = grant.tool.as_str();
    let c = &grant.constraints;
    let allowing = grant.mode != Mode::Deny;
    let (required, forbidden): (Option<&'static str>, &[&'static str]) = match subject {
        Subject::Path => (Some("paths"), &["hosts"]),
        Subject::Url => (Some("hosts"), &["paths"]),
        Subject::Prompt => (None, &["paths", "hosts"]),
        Subject::Note if matches!(tool, "note_list" | "note_search" | "session_search") => {
            (None, &["paths", "hosts", "patterns"])
        }
        Subject::Note => (None, &["paths", "hosts"]),
        Subject::Mcp => (None, &["patterns"]),
        // A run's paths and hosts are what its unit gets (binds, network), not matched.
        Subject::Program => (Some("programs"), &[]),
    };
    if subject == Subject::Mcp {
        mcp::validate(grant).map_err(InvalidGrant::Mcp)?;
    } else if !c.args.is_empty() {
        return Err(InvalidGrant::Mcp(McpGrantError::ArgsNotMcp {
            tool: tool.to_owned(),
        }));
    }
    if c.max_class.is_some() && !matches!(tool, "note_search" | "session_search") {
        return Err(InvalidGrant::NotApplicable {
            list: "max_class",
            tool: tool.to_owned(),
            subject,
        });
    }
    for &list in forbidden {
        if !list_named(c, list).is_empty() {
            return Err(InvalidGrant::NotApplicable {
                list,
                tool: tool.to_owned(),
                subject,
            });
        }
    }
    if let Some(list) = required
        && allowing
        && list_named(c, list).is_empty()
    {
        return Err(InvalidGrant::Required {
            list,
            tool: tool.to_owned(),
        });
    }
    // Patterns are a run's argument allowlist: "any argument" is written, never implied.
    if subject == Subject::Program && allowing && c.patterns.is_empty() {
        return Err(InvalidGrant::Required {
            list: "patterns",
            tool: tool.to_owned(),
        });
    }
    for (index, p) in c.paths.iter().enumerate() {
        path::validate_entry(p).map_err(|source| InvalidGrant::Path {
            index,
            error: source,
        })?;
    }
    for (index, h) in c.hosts.iter().enumerate() {
        Entry::parse(h).map_err(|source| InvalidGrant::Host {
            index,
            error: source,
        })?;
    }
    for (index, p) in c.patterns.iter().enumerate() {
        Pattern::parse(p).map_err(|source| InvalidGrant::Pattern {
            index,
            error: source,
        })?;
    }
    hands::validate(grant).map_err(InvalidGrant::Hands)?;
    reach::validate(grant)
}

fn list_named<'a>(c: &'a proto::Constraints, name: &str) -> &'a [String] {
    match name {
        "paths" => &c.paths,
        "hosts" => &c.hosts,
        "patterns" => &c.patterns,
        "programs" => &c.programs,
        _ => &[],
    }
}

/// Whether the grant's constraints cover these (already strictly parsed) arguments.
/// Err(why not). Every non-empty list must match; an empty list matches every
/// value, which `validate` allows only where it is meant (deny grants, consult).
///
/// A grant that fails [`validate`] covers nothing. For a deny grant that would mean denying
/// less, so callers must validate every grant at load and refuse to start on a bad one.
/// Arguments that cannot be normalised (a relative path, `..`, a non-http URL) are covered by
/// no grant at all, deny grants included: the caller denies them for want of a grant, or
/// earlier, by calling [`normalize_path`] / [`normalize_url`] itself.
pub fn check(grant: &Grant, args: &ToolArgs) -> Result<Covered, Mismatch> {
    validate(grant).map_err(Mismatch::Invalid)?;
    if let ToolArgs::Mcp(call) = args {
        if !mcp::names(&grant.tool, call) {
            return Err(Mismatch::OtherTool {
                grant: grant.tool.clone(),
                call: call.grant_tool(),
            });
        }
        mcp::check(grant, call).map_err(Mismatch::Args)?;
        return Ok(Covered::default());
    }
    if grant.tool != args.tool() {
        return Err(Mismatch::OtherTool {
            grant: grant.tool.clone(),
            call: args.tool().to_owned(),
        });
    }
    let c = &grant.constraints;
    let covered = match args {
        ToolArgs::ReadFile(proto::tools::ReadFileArgs { path })
        | ToolArgs::ListDir(proto::tools::ListDirArgs { path })
        | ToolArgs::WriteFile(proto::tools::WriteFileArgs { path, .. })
        | ToolArgs::EditFile(proto::tools::EditFileArgs { path, .. }) => {
            if let ToolArgs::WriteFile(a) = args {
                hands::check_mode(c, a)?;
            }
            let path = normalize_path(path).map_err(Mismatch::Path)?;
            if !c.paths.is_empty() && !c.paths.iter().any(|root| is_under(&path, root)) {
                return Err(Mismatch::NotUnder {
                    path,
                    roots: c.paths.clone(),
                });
            }
            check_patterns(&c.patterns, Subject::Path, &path)?;
            Covered {
                path: Some(path),
                ..Covered::default()
            }
        }
        ToolArgs::HttpFetch(a) => {
            let (url, host) = normalize_url(&a.url).map_err(Mismatch::Url)?;
            if !c.hosts.is_empty() && !any_host_matches(&c.hosts, &host) {
                return Err(Mismatch::HostNotListed {
                    host,
                    url: url.as_str().to_owned(),
                    hosts: c.hosts.clone(),
                });
            }
            check_patterns(&c.patterns, Subject::Url, url.as_str())?;
            Covered {
                path: None,
                host: Some(host),
                url: Some(url),
            }
        }
        ToolArgs::Consult(a) => {
            check_patterns(&c.patterns, Subject::Prompt, &a.prompt)?;
            Covered::default()
        }
        ToolArgs::NoteWrite(proto::tools::NoteWriteArgs { name, .. })
        | ToolArgs::NoteRead(proto::tools::NoteReadArgs { name }) => {
            check_patterns(&c.patterns, Subject::Note, name)?;
            Covered::default()
        }
        ToolArgs::NoteList(_)
        | ToolArgs::NoteSearch(_)
        | ToolArgs::SessionSearch(_)
        | ToolArgs::Mcp(_) => Covered::default(),
        ToolArgs::Run(a) => {
            hands::check_run(grant, a)?;
            Covered::default()
        }
    };
    Ok(covered)
}

/// Whether `grant` is for the tool of this call: the same name, or for an MCP call the
/// grant's `mcp:<server>/<tool>` or `mcp:<server>/*`. A grant for no such tool covers
/// nothing of it.
pub fn for_call(grant: &Grant, args: &ToolArgs) -> bool {
    match args {
        ToolArgs::Mcp(call) => mcp::names(&grant.tool, call),
        other => grant.tool == other.tool(),
    }
}

/// Whether a grant's `paths` reach what a tool unit has bound at `bound` (normalised): the
/// bound path lies under one of them, or, when `subtree` (a directory is bound with all that
/// is below it), one of them lies below it. For labelling, so it errs towards reaching:
/// patterns narrow only a single bound file, an empty list (a deny grant's "every value")
/// reaches everything, and a grant of a tool that reads no paths reaches nothing. A `run`
/// grant reaches what it binds (its `paths` and `workdir`, each a whole directory).
pub fn reaches(grant: &Grant, bound: &str, subtree: bool) -> bool {
    let c = &grant.constraints;
    match subject_of(&grant.tool) {
        Ok(Subject::Path) => {}
        // An MCP grant's paths are bound into its server's unit: they reach like a read's.
        // Without paths it binds nothing, so it reaches nothing (not "every value").
        Ok(Subject::Mcp) if !c.paths.is_empty() => {}
        Ok(Subject::Program) => {
            return hands::run_binds(c)
                .any(|root| is_under(bound, root) || subtree && is_under(root, bound));
        }
        _ => return false,
    }
    let patterns_allow = || subtree || any_pattern_matches(&c.patterns, bound);
    c.paths.is_empty() && patterns_allow()
        || c.paths.iter().any(|root| {
            is_under(bound, root) && patterns_allow() || subtree && is_under(root, bound)
        })
}

/// Whether `grant`'s `hosts` list `host` (an entry that names it, or a `*.suffix` above
/// it): what a remote MCP server's grant must do for its unit to reach the server's URL.
pub fn lists_host(grant: &Grant, host: &Host) -> bool {
    any_host_matches(&grant.constraints.hosts, host)
}

fn any_host_matches(entries: &[String], host: &Host) -> bool {
    // Entries were validated just before; one that does not parse matches nothing.
    entries
        .iter()
        .filter_map(|e| Entry::parse(e).ok())
        .any(|e| e.matches(host))
}

/// Within one list any pattern may match; an empty list matches every value.
fn any_pattern_matches(patterns: &[String], value: &str) -> bool {
    // Patterns were validated just before; one that does not parse matches nothing.
    patterns.is_empty()
        || patterns
            .iter()
            .filter_map(|p| Pattern::parse(p).ok())
            .any(|p| p.matches(value))
}

fn check_patterns(patterns: &[String], subject: Subject, value: &str) -> Result<(), Mismatch> {
    if any_pattern_matches(patterns, value) {
        return Ok(());
    }
    Err(Mismatch::NoPattern {
        subject,
        value: value.to_owned(),
        patterns: patterns.to_vec(),
    })
}
