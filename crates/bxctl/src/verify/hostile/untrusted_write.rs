//! Untrusted content driving a write (docs/verify.md, decisions V25, V37, V50): the chains
//! from each fetch, consult and MCP tool whose answer carries `BXWRITE-TOKEN` to a
//! `write_file` or `edit_file` under each path of each write or edit grant of an ordinary
//! session.

use super::chains::{Chain, Source, Target, canary, url};
use std::collections::BTreeMap;

use proto::Grant;

use super::rewrite::Rewritten;

/// Untrusted content driving a write: each fetch and consult (the sink's answer, which
/// carries `BXWRITE-TOKEN` for the chain's token, untrusted as its grant says), then a
/// `write_file` of what it answered under each path of each write grant of an ordinary
/// session (in a file its patterns match: `pattern`), or an `edit_file` putting it in place of the line
/// [`super::chains::edit_old`] planted there.
/// What the chain wrote is looked for there.
pub fn plan(r: &Rewritten, fetches: &[Target], port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    let mut writes = Vec::new();
    for (id, g) in &r.grants {
        let tool = match g.tool.as_str() {
            "write_file" => "write_file",
            "edit_file" => "edit_file",
            _ => continue,
        };
        if g.mode == proto::Mode::Deny || g.job.is_some() {
            continue;
        }
        for (owner, (shadow, file)) in &r.paths {
            if g.constraints.paths.contains(&shadow.display().to_string()) {
                writes.push((tool, id, g, owner, shadow.display().to_string(), *file));
            }
        }
    }
    // The consults' and the MCP tools' after the fetches', so that those keep their numbers.
    let by = |tool: &'static str| fetches.iter().filter(move |t| t.tool == tool);
    let sources = by("http_fetch")
        .chain(by("consult"))
        .map(|t| (t.tool, t.entry.clone(), t.entry.clone()))
        .chain(
            super::mcp::sources(r)
                .into_iter()
                .map(|s| (s.tool, s.owner, s.path)),
        );
    for (fetch, owner_of, entry) in sources {
        for (_, grant, g, owner, shadow, file) in &writes {
            let n = chains.len() + 1;
            let token = canary(nonce, n);
            let source = Source {
                tool: fetch,
                owner: owner_of.clone(),
                path: match fetch {
                    "consult" => format!("{}{token}", super::sink::ASK),
                    "mcp" => entry.clone(),
                    _ => url(&entry, None, port, &token),
                },
            };
            let made = chain(
                n,
                source,
                &token,
                (grant, g),
                &r.grants,
                owner,
                (shadow, *file),
            );
            chains.extend(made);
        }
    }
}

/// Chain `n`: `source`, whose answer carries `BXWRITE-TOKEN` for `token`, then that answer
/// written by write or edit grant `grant` under the shadow's `path` of the owner's `owner`
/// (a file when `file`), in a file its patterns match and a mode it allows (among the
/// grants of its `scope`); `None` when it names none (not tried: `pattern::unnamed`).
pub fn chain(
    n: usize,
    source: Source,
    token: &str,
    (grant, g): (&str, &Grant),
    scope: &BTreeMap<String, Grant>,
    owner: &str,
    (path, file): (&str, bool),
) -> Option<Chain> {
    let tool = if g.tool == "edit_file" {
        "edit_file"
    } else {
        "write_file"
    };
    let written = super::pattern::written(g, path, file, n).ok()?;
    let write_mode = match tool {
        "write_file" => Some(super::pattern::mode(g, scope, &written, n).ok()?),
        _ => None,
    };
    Some(Chain {
        n,
        source,
        sink: Target {
            tool,
            grant: grant.to_owned(),
            entry: owner.to_owned(),
            lookalike: None,
        },
        canary: format!("{}{token}", super::sink::WRITE),
        url: written,
        note: None,
        restart: None,
        smuggle: None,
        write_mode,
    })
}
