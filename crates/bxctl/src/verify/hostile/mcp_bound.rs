//! An MCP server reading its grant's bound paths and sending them in one call (docs/verify.md,
//! decisions V53), as `run_bound` plays a program doing it. brokerd binds an MCP grant's
//! `paths` into the server's unit, and a server is told its places as the owner configures
//! it (a filesystem server's roots on its command line); a grant that also lists hosts lets
//! that one call read them and send them out, decided before anything was read. The shadow's
//! stand-in of a tool under such a grant is told the grant's (moved) paths (its script's
//! `reads`): at each call it reads every file under them and sends each line, recording it
//! with the call's arguments in its `sent_file` (`fake-mcp-server`'s, instead of a request).
//! A chain of its own plants a canary under the grant's first path and makes one call of the
//! tool, its arguments without the canary (`data` is `bxbound-N`, the chain's own): it
//! `leaked` when the stand-in sent the canary in that very call (its arguments) and the
//! grant that decided the call (from the audit log) is the bound grant itself, which lists
//! hosts (another grant's unit binds other paths, or none). A remote server's stand-in has
//! no such chain: brokerd binds nothing for a remote server (it runs elsewhere), and the
//! analysis reports no such flow of it (decisions V58).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::chains::{Chain, Source, Target};
use super::rewrite::Rewritten;

/// What a bound chain's call carries in `data`, before its number (the canary is under the
/// paths, never in the call).
const BOUND: &str = "bxbound-";

/// Whether `g` is an MCP grant whose one call can read what it binds and send it: it
/// allows (in an ordinary session, or in a run of its job), binds paths and lists hosts.
fn binds_and_sends(g: &proto::Grant) -> bool {
    g.mode != proto::Mode::Deny
        && !g.constraints.paths.is_empty()
        && !g.constraints.hosts.is_empty()
        && super::mcp::tool_of(&g.tool).is_some()
}

/// The paths each tool of a stand-in reads and sends at each call: by the stand-in's tool
/// name, every path of the `grants` (a server's) that bind and send. Several such grants of
/// one tool: all their paths (the chain counts only a call its own grant decided).
pub fn reads(grants: &[&proto::Grant]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for g in grants.iter().filter(|g| binds_and_sends(g)) {
        let tool = super::mcp::tool_of(&g.tool).unwrap_or_default();
        let paths = out.entry(tool.to_owned()).or_default();
        for p in &g.constraints.paths {
            if !paths.contains(p) {
                paths.push(p.clone());
            }
        }
    }
    out
}

/// Whether `c` is a bound chain: its one MCP call is its source and its sink (no other
/// chain pairs a tool with itself but through a note or a search, `mcp::apart`).
pub fn is(c: &Chain) -> bool {
    c.source.tool == "mcp"
        && c.sink.tool == "mcp"
        && super::mcp::source_called(&c.source) == c.sink.entry
        && c.note.is_none()
        && c.restart.is_none()
        && c.smuggle.is_none()
}

/// The first path a bound chain's grant binds, in the shadow: where its canary is planted.
fn first_path<'a>(r: &'a Rewritten, c: &Chain) -> Option<&'a String> {
    r.grant(&c.sink.grant)
        .and_then(|g| g.constraints.paths.first())
}

/// A bound chain for each MCP sink of a local server whose grant binds paths (a remote
/// server's, `r.remote`, is bound nothing): its canary planted under the grant's first path,
/// its one call the sink's tool with `data` [`BOUND`]`N`.
pub fn plan(r: &Rewritten, port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    for t in super::mcp::targets(r) {
        let n = chains.len() + 1;
        chains.extend(chain(r, &t, port, nonce, n));
    }
}

/// Chain `n`, bound, through MCP sink `t` (an ordinary session's, or a job's: `jobs`), when
/// its grant binds paths and sends, of a local server.
pub fn chain(r: &Rewritten, t: &Target, port: u16, nonce: &str, n: usize) -> Option<Chain> {
    let g = r.grant(&t.grant).filter(|g| binds_and_sends(g))?;
    let remote = super::mcp::server_of(&g.tool).is_some_and(|s| r.remote.contains(s));
    let shadow = g.constraints.paths.first().filter(|_| !remote)?;
    let source = Source {
        tool: "mcp",
        owner: r.owner_of(shadow),
        path: t.entry.clone(),
    };
    Some(Chain {
        url: format!("{BOUND}{n}"),
        ..Chain::send(n, source, t, port, nonce)
    })
}

/// Plants each bound chain's canary under its grant's first path: a file of its own in a
/// directory, a line added to a file (made if absent).
pub fn plant(r: &Rewritten, chains: &[Chain]) -> std::io::Result<()> {
    for c in chains.iter().filter(|c| is(c)) {
        let Some(first) = first_path(r, c) else {
            continue;
        };
        let path = Path::new(first);
        let file = r
            .paths
            .values()
            .chain(r.job_paths.values())
            .any(|(s, file)| *file && s.as_path() == path);
        let name = format!("bxhostile-mcp-{}", c.n);
        super::chains::plant_bound(path, file, &name, &c.canary)?;
    }
    Ok(())
}

/// Whether the stand-in's `sent` record (its `sent_file`'s text) holds `c`'s canary, sent by
/// its tool `tool` in `c`'s own call (the arguments the chain's call carried).
pub fn sent_it(sent: &str, c: &Chain, tool: &str) -> bool {
    let arguments = serde_json::from_str::<Value>(&super::mcp_args::sent(&c.url)).ok();
    sent.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|record| {
            record["name"] == tool
                && Some(&record["arguments"]) == arguments.as_ref()
                && record["line"]
                    .as_str()
                    .is_some_and(|line| line.contains(&c.canary))
        })
}
