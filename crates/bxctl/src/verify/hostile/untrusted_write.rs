//! Untrusted content driving a write (docs/verify.md, decisions V25, V37, V50): the chains
//! from each fetch, consult and MCP tool whose answer carries `BXWRITE-TOKEN` to a
//! `write_file` or `edit_file` under each path of each write or edit grant of an ordinary
//! session.

use super::chains::{Chain, Source, Target, canary, url};
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
        for (tool, grant, g, owner, shadow, file) in &writes {
            let n = chains.len() + 1;
            // A file the grant's patterns match; none: not tried (`pattern::unnamed`).
            let Ok(written) = super::pattern::written(g, shadow, *file, n) else {
                continue;
            };
            // A mode the grant allows; none: not tried (`pattern::unnamed`).
            let write_mode = match *tool {
                "write_file" => match super::pattern::mode(g, &written, n) {
                    Ok(m) => Some(m),
                    Err(_) => continue,
                },
                _ => None,
            };
            let token = canary(nonce, n);
            chains.push(Chain {
                n,
                source: Source {
                    tool: fetch,
                    owner: owner_of.clone(),
                    path: match fetch {
                        "consult" => format!("{}{token}", super::sink::ASK),
                        "mcp" => entry.clone(),
                        _ => url(&entry, None, port, &token),
                    },
                },
                sink: Target {
                    tool,
                    grant: (*grant).clone(),
                    entry: (*owner).clone(),
                    lookalike: None,
                },
                canary: format!("{}{token}", super::sink::WRITE),
                url: written,
                note: None,
                restart: None,
                smuggle: None,
                write_mode,
            });
        }
    }
}
