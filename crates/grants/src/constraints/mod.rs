//! Grant constraints: what `paths`, `hosts`, `patterns` and `private_networks` mean, for
//! each tool. The rules are written for owners in `docs/grants.md`; this module is their
//! only implementation.
//!
//! Pure functions over strings: brokerd runs sandboxed and may not see the owner's files,
//! and a decision must not depend on what the file system looks like at the moment.

mod host;
mod path;
mod pattern;
mod reach;

use proto::Grant;
use proto::Mode;
use proto::tools::{TOOL_NAMES, ToolArgs};

pub use host::{Host, normalize_url};
pub use path::{is_under, normalize_path};
pub use reach::{Place, Reach, Unreachable, Zone, admit, place};

use host::Entry;
use pattern::Pattern;

/// What a call looks like once its grant covers it: the normalised values the tool must use,
/// so that what was checked is what runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Covered {
    /// `read_file`, `list_dir`: the normalised path.
    pub path: Option<String>,
    /// `http_fetch`: the URL's host, the one to resolve and let through.
    pub host: Option<Host>,
    /// `http_fetch`: the normalised URL, the one to fetch.
    pub url: Option<url::Url>,
}

/// What a tool's arguments are matched as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject {
    Path,
    Url,
    Prompt,
}

fn subject_of(tool: &str) -> Result<Subject, String> {
    match tool {
        "read_file" | "list_dir" => Ok(Subject::Path),
        "http_fetch" => Ok(Subject::Url),
        "consult" => Ok(Subject::Prompt),
        other => Err(format!(
            "no tool is named {other:?} (the tools are {})",
            TOOL_NAMES.join(", ")
        )),
    }
}

/// Load-time check of one grant's constraints for its tool. Err(reason for a person).
pub fn validate(grant: &Grant) -> Result<(), String> {
    let subject = subject_of(&grant.tool)?;
    let tool = grant.tool.as_str();
    let c = &grant.constraints;
    let allowing = grant.mode != Mode::Deny;
    let (required, forbidden): (Option<&str>, &[&str]) = match subject {
        Subject::Path => (Some("paths"), &["hosts"]),
        Subject::Url => (Some("hosts"), &["paths"]),
        Subject::Prompt => (None, &["paths", "hosts"]),
    };
    for list in forbidden {
        if !list_named(c, list).is_empty() {
            let why = match subject {
                Subject::Path => "it reads local files; patterns can narrow it further",
                Subject::Url => "it fetches URLs; hosts and patterns limit it",
                Subject::Prompt => "its destination is the endpoint brokerd is configured with",
            };
            return Err(format!(
                "constraints.{list} does not apply to {tool} ({why}): remove it"
            ));
        }
    }
    if let Some(list) = required
        && allowing
        && list_named(c, list).is_empty()
    {
        return Err(format!(
            "an allowing grant for {tool} must list constraints.{list} (only a deny grant \
             may leave it empty, meaning every value)"
        ));
    }
    for (i, p) in c.paths.iter().enumerate() {
        path::validate_entry(p).map_err(|e| format!("constraints.paths[{i}]: {e}"))?;
    }
    for (i, h) in c.hosts.iter().enumerate() {
        Entry::parse(h).map_err(|e| format!("constraints.hosts[{i}]: {e}"))?;
    }
    for (i, p) in c.patterns.iter().enumerate() {
        Pattern::parse(p).map_err(|e| format!("constraints.patterns[{i}]: {e}"))?;
    }
    reach::validate(grant)
}

fn list_named<'a>(c: &'a proto::Constraints, name: &str) -> &'a [String] {
    match name {
        "paths" => &c.paths,
        "hosts" => &c.hosts,
        "patterns" => &c.patterns,
        _ => &[],
    }
}

/// Whether the grant's constraints cover these (already strictly parsed) arguments.
/// Err(why not, for a person). Every non-empty list must match; an empty list matches every
/// value, which `validate` allows only where it is meant (deny grants, consult).
///
/// A grant that fails [`validate`] covers nothing. For a deny grant that would mean denying
/// less, so callers must validate every grant at load and refuse to start on a bad one.
/// Arguments that cannot be normalised (a relative path, `..`, a non-http URL) are covered by
/// no grant at all, deny grants included: the caller denies them for want of a grant, or
/// earlier, by calling [`normalize_path`] / [`normalize_url`] itself.
pub fn check(grant: &Grant, args: &ToolArgs) -> Result<Covered, String> {
    validate(grant).map_err(|e| format!("the grant is invalid: {e}"))?;
    if grant.tool != args.tool() {
        return Err(format!(
            "the grant is for {}, the call is to {}",
            grant.tool,
            args.tool()
        ));
    }
    let c = &grant.constraints;
    let covered = match args {
        ToolArgs::ReadFile(proto::tools::ReadFileArgs { path })
        | ToolArgs::ListDir(proto::tools::ListDirArgs { path }) => {
            let path = normalize_path(path)?;
            if !c.paths.is_empty() && !c.paths.iter().any(|root| is_under(&path, root)) {
                return Err(format!(
                    "{path:?} is not under any of {}",
                    c.paths.join(", ")
                ));
            }
            check_patterns(&c.patterns, &path, &format!("{path:?}"))?;
            Covered {
                path: Some(path),
                ..Covered::default()
            }
        }
        ToolArgs::HttpFetch(a) => {
            let (url, host) = normalize_url(&a.url)?;
            if !c.hosts.is_empty() && !any_host_matches(&c.hosts, &host) {
                return Err(format!(
                    "the host {host} of {:?} is not any of {}",
                    url.as_str(),
                    c.hosts.join(", ")
                ));
            }
            check_patterns(&c.patterns, url.as_str(), &format!("{:?}", url.as_str()))?;
            Covered {
                path: None,
                host: Some(host),
                url: Some(url),
            }
        }
        ToolArgs::Consult(a) => {
            check_patterns(&c.patterns, &a.prompt, "the prompt")?;
            Covered::default()
        }
    };
    Ok(covered)
}

/// Whether a grant's `paths` reach what a tool unit has bound at `bound` (normalised): the
/// bound path lies under one of them, or, when `subtree` (a directory is bound with all that
/// is below it), one of them lies below it. For labelling, so it errs towards reaching:
/// patterns narrow only a single bound file, an empty list (a deny grant's "every value")
/// reaches everything, and a grant of a tool that reads no paths reaches nothing.
pub fn reaches(grant: &Grant, bound: &str, subtree: bool) -> bool {
    if subject_of(&grant.tool) != Ok(Subject::Path) {
        return false;
    }
    let c = &grant.constraints;
    let patterns_allow = || subtree || check_patterns(&c.patterns, bound, "").is_ok();
    c.paths.is_empty() && patterns_allow()
        || c.paths.iter().any(|root| {
            is_under(bound, root) && patterns_allow() || subtree && is_under(root, bound)
        })
}

fn any_host_matches(entries: &[String], host: &Host) -> bool {
    // Entries were validated just before; one that does not parse matches nothing.
    entries
        .iter()
        .filter_map(|e| Entry::parse(e).ok())
        .any(|e| e.matches(host))
}

/// Within one list any pattern may match; `what` names the subject in the refusal without
/// repeating a whole prompt.
fn check_patterns(patterns: &[String], subject: &str, what: &str) -> Result<(), String> {
    if patterns.is_empty()
        || patterns
            .iter()
            .filter_map(|p| Pattern::parse(p).ok())
            .any(|p| p.matches(subject))
    {
        return Ok(());
    }
    let list: Vec<String> = patterns.iter().map(|p| format!("{p:?}")).collect();
    Err(format!(
        "{what} matches none of the patterns {}",
        list.join(", ")
    ))
}
