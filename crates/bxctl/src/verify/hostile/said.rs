//! How a chain's line says what it did: its read, what came between and its send, named
//! by the grants that decided them (`compare` gives the verdict).

use super::chains::Chain;
use super::compare::Outcome;

/// How a chain's line names its send.
pub(super) fn send_of(c: &Chain) -> &'static str {
    match c.sink.tool {
        "consult" => "consult",
        "write_file" => "write",
        "edit_file" => "edit",
        "mcp" => "MCP call",
        "run" | super::run::WRITE => "run",
        _ => "fetch",
    }
}

/// How a chain's line names its first step.
pub(super) fn read_of(c: &Chain) -> &'static str {
    match c.source.tool {
        "write_file" | "note_write" => "write",
        "edit_file" => "edit",
        _ => "read",
    }
}

/// How a chain's line says its source call, before what it names.
pub(super) fn reads_of(c: &Chain) -> &'static str {
    match c.source.tool {
        "list_dir" | "note_list" => "list",
        "note_search" | "session_search" => "search",
        "http_fetch" => "fetch from",
        "consult" => "ask",
        // A bound chain's call reads its grant's paths (`mcp_bound`).
        "mcp" if super::mcp_bound::is(c) => "read",
        "mcp" => "call",
        "run" if super::run_source::is(c) => "run",
        "write_file" => "append to a file in",
        "note_write" => "append to a note in",
        "edit_file" => "edit a file in",
        _ => "read",
    }
}

/// Where the chain's send goes, as its line says it: the sink's entry, a look-alike of it,
/// or it with the way its arguments were smuggled.
pub(super) fn to(c: &Chain) -> String {
    match (c.sink.lookalike, c.smuggle) {
        (Some(l), _) => format!("a {l} look-alike of {} ({})", c.sink.entry, c.url),
        (None, Some(k)) => format!(
            "{} smuggled in {} ({})",
            c.sink.entry,
            super::smuggle::said(k),
            c.url
        ),
        (None, None) => c.sink.entry.clone(),
    }
}

/// The chain's line, up to its verdict: the read, what came between, and the send.
pub(super) fn describe(c: &Chain, o: &Outcome) -> String {
    let (sg, kg) = o.grants();
    let class = o
        .class()
        .map_or_else(String::new, |c| format!(" ({})", c.as_str()));
    let via = |g: Option<&str>| g.map_or_else(String::new, |g| format!(" via grant {g}"));
    let reads = reads_of(c);
    let to = to(c);
    let note = match &c.note {
        Some(n) => super::search::between(c, n),
        None => match c.restart {
            Some(super::launder::COMPACTION) => "; the turn ends and the session compacts, its \
                summary carrying it; the next epoch's turn"
                .into(),
            Some(d) => format!("; the turn ends and {d} restarts; the session's next turn"),
            None => String::new(),
        },
    };
    let act = match c.sink.tool {
        "write_file" => format!("write it under {to}"),
        "edit_file" => format!("edit it into {to}"),
        super::run::WRITE => format!("run {to} with it, in its workdir"),
        // What a write's result carries of the file: its new text's hash.
        _ if super::write_source::is(c) => format!("send the file's new hash to {to}"),
        _ if super::note_source::is_write(c) => format!("send the note's new hash to {to}"),
        _ => format!("send it to {to}"),
    };
    format!(
        "{reads} {}{class}{}{note}{} {act}{}",
        c.source.owner,
        via(sg),
        if c.restart.is_some() { ":" } else { ", then" },
        via(kg)
    )
}
