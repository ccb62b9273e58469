//! Which reported flows the shadow plays: a flow it cannot play is `not tried`, with why
//! (`compare` holds the rest against the chains).

use std::collections::BTreeSet;

use proto::flows::Flow;

use super::rewrite::{Left, Scope};

/// Why grant `g`, said in `left` with one of `scopes`, is not played as a source: its
/// line's reason.
pub(super) fn as_source(g: &str, left: &[Left], scopes: &[Scope]) -> Option<String> {
    let l = left
        .iter()
        .find(|l| l.grant == g && scopes.contains(&l.scope))?;
    Some(format!("grant {g} is not played as a source: {}", l.why))
}

/// Why an untrusted write into `f`'s sink grant is not played: the grant names no file the
/// shadow can write, by its patterns or its modes (`pattern::unnamed`), or it is left out;
/// `None`: it names one.
pub(super) fn unwritten(f: &Flow, left: &[Left]) -> Option<String> {
    let g = f.sink.grant.as_deref()?;
    let l = left
        .iter()
        .find(|l| l.grant == g && matches!(l.scope, Scope::Grant | Scope::Written))?;
    Some(match l.scope {
        Scope::Written => format!("grant {g} as an untrusted write's sink: not tried (below)"),
        _ => format!("grant {g} names no file the shadow can write (below)"),
    })
}

/// Why the shadow does not play a reported flow; `None`: it does.
pub(super) fn not_played(f: &Flow, patterned: &BTreeSet<String>, left: &[Left]) -> Option<String> {
    if let Some(why) = super::mcp::not_played(f, left).or_else(|| super::run::not_played(f, left)) {
        return Some(why);
    }
    // A source the shadow plants for, or whose answer the sink or a stand-in makes.
    let tool = f.source.tool.as_str();
    let played_source =
        super::chains::planted(tool) || matches!(tool, "mcp" | "http_fetch" | "consult");
    let untrusted = f.severity == proto::flows::Severity::UntrustedWrite;
    let written = matches!(f.sink.tool.as_str(), "write_file" | "edit_file" | "run");
    if untrusted && (!played_source || !written) {
        return Some(format!(
            "untrusted content from {} driving {} is not played yet (a read's, a listing's, \
             a fetch's, a consult's, an MCP tool's, a note's, a listing's or a search's of \
             the notes or the logs, a note write's, a program's or a write's result \
             driving write_file, edit_file or a run in its workdir is)",
            f.source.tool, f.sink.tool
        ));
    }
    if !played_source {
        return Some(format!(
            "a source of {} is not played yet (reads, listings, fetches, consults, the \
             notes' reads, listings, searches and writes, the logs' searches, MCP tools, a \
             program's bound paths, writes and edits are)",
            f.source.tool
        ));
    }
    if !untrusted
        && !matches!(
            f.sink.tool.as_str(),
            "http_fetch" | "consult" | "mcp" | "run"
        )
    {
        return Some(format!(
            "a sink of {} is not played yet (fetches, consults, MCP tools and programs are)",
            f.sink.tool
        ));
    }
    // The file an untrusted write writes is one its grant's patterns match (`pattern`), or
    // none is; after what its source's grant says.
    let sink = || untrusted.then(|| unwritten(f, left)).flatten();
    let source = match &f.source.grant {
        // A write grant's result the shadow does not play (`write_source::unplayed`), or one
        // whose patterns name no file (`pattern::unnamed`).
        Some(g)
            if matches!(f.source.tool.as_str(), "write_file" | "edit_file")
                && left.iter().any(|l| l.grant == *g) =>
        {
            as_source(g, left, &[Scope::Grant, Scope::Source])
        }
        // A program's bound paths hold a canary of its own (`run_bound`), whatever its
        // grant's patterns, and a write's file is named for them (`write_source`).
        Some(_) if matches!(f.source.tool.as_str(), "run" | "write_file" | "edit_file") => None,
        // A search grant saying `untrusted = false` (`search_source::unplayed`).
        Some(g) if matches!(f.source.tool.as_str(), "note_search" | "session_search") => {
            as_source(g, left, &[Scope::Source])
        }
        Some(g) if patterned.contains(g) && left.iter().any(|l| l.grant == *g) => Some(format!(
            "grant {g} names patterns no file the shadow reads matches (below)"
        )),
        Some(g) if patterned.contains(g) => Some(format!(
            "grant {g} names patterns, and {} is the shadow's own",
            super::fetch_source::named_by(&f.source.tool)
        )),
        _ => None,
    };
    source.or_else(sink)
}
