//! MCP stand-ins for the shadow (docs/verify.md, decisions V30): each of the owner's
//! `[[mcp]]` servers that a grant names is listed in the shadow's `STATE/mcp.toml` by the
//! same name, but runs the project's own `fake-mcp-server` (installed beside bxctl, as the
//! fake llama-server is) offering the granted tool names (`mcp:server/tool`; for
//! `mcp:server/*` the stand-in's [`WILD`]) and recording each call's arguments in a file of
//! the scratch directory. The owner's command is never run and the owner's URL never
//! reached: a remote server's stand-in is `fake-mcp-server --http` on loopback, at the
//! owner's URL's host (which brokerd's `[broker.self_test]` resolves to loopback) and the
//! stand-in's port. The shadow's brokerd pins each stand-in as it lists itself (the
//! self-test is the shadow's owner). A grant naming `constraints.args` has its calls carry
//! arguments that meet them (`mcp_args`, decisions V40). A job's grants are stood in for
//! too (decisions V61), and a tool answers its source canaries only to a call carrying
//! [`SOURCE`]: a send through it sets off no other chain's. A local server's tool whose grant
//! binds paths and lists hosts reads them and sends what it read in each call (`mcp_bound`,
//! decisions V53). A server the shadow cannot stand in
//! for (one with a grant whose args no call meets, one not configured, no
//! `fake-mcp-server`) has its grants left out and said; a job's grant whose args no call
//! meets, the jobs' grants of that server alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Child;

use config::{Config, McpServer};
use proto::Message;
use proto::mcp::{McpPin, McpPinOutput, McpProbe};
use serde_json::json;

use super::chains::{Chain, Source, Target};
use super::rewrite::{Left, Rewritten, Scope};

/// What a source call gives its tool (in `data`, or the field `mcp_args::carrier` names):
/// the stand-in answers the canaries to a call carrying it only.
pub const SOURCE: &str = "bxmcp-source";

/// The stand-in's tool for a grant of every tool of a server (`mcp:server/*`).
pub const WILD: &str = "bxhostile_tool";

/// The shadow's stand-ins: each server's tools, script and calls, the remote ones running.
#[derive(Debug, Default)]
pub struct StandIns {
    /// Each stand-in's server name, its tools, and the files of its script and its calls.
    servers: BTreeMap<String, Server>,
    /// `fake-mcp-server`.
    fake: PathBuf,
    /// `STATE/mcp.toml`'s text, once [`StandIns::write`] made it.
    toml: String,
    /// The remote servers' stand-ins, running (`fake-mcp-server --http`): stopped when
    /// dropped, and each ends by itself when its stdin, held here, closes.
    running: Vec<Child>,
}

#[derive(Debug)]
struct Server {
    tools: BTreeSet<String>,
    script: PathBuf,
    calls: PathBuf,
    /// Where it records what its tools that read their bound paths send (`mcp_bound`).
    sent: PathBuf,
    /// By tool, the paths it reads and sends at each call (`mcp_bound::reads`).
    reads: BTreeMap<String, Vec<String>>,
    /// A remote server's: the owner's URL and its `secret_header`.
    remote: Option<(String, Option<String>)>,
}

/// The server and tool an MCP grant names; `None` for any other tool.
fn split(tool: &str) -> Option<(&str, &str)> {
    grants::constraints::mcp::split(tool).and_then(Result::ok)
}

/// The server a grant's tool names.
pub fn server_of(grant_tool: &str) -> Option<&str> {
    split(grant_tool).map(|(s, _)| s)
}

/// The stand-in's name for a grant's tool: its own, the stand-in's [`WILD`] for `*`.
pub fn tool_of(grant_tool: &str) -> Option<&str> {
    split(grant_tool).map(|(_, t)| if t == "*" { WILD } else { t })
}

/// The name the model calls a grant's tool by: `mcp__server__tool`, the stand-in's
/// [`WILD`] for `*`.
pub fn function(grant_tool: &str) -> Option<String> {
    let (server, tool) = split(grant_tool)?;
    let tool = if tool == "*" { WILD } else { tool };
    Some(format!("mcp__{server}__{tool}"))
}

/// Why the shadow cannot stand in for `server`, with the owner's `[[mcp]]` entries and the
/// grants of that server; `None`: it can.
fn unplayable(server: &str, owner: &[McpServer], grants: &[&proto::Grant]) -> Option<String> {
    if !owner.iter().any(|s| s.name == server) {
        return Some(format!(
            "server {server} is not configured ([[mcp]]): brokerd refuses its calls"
        ));
    }
    // A grant naming `constraints.args`: its calls carry arguments that meet them (`mcp_args`).
    grants.iter().find_map(|g| {
        let tool = tool_of(&g.tool)?;
        let why = super::mcp_args::pinned(g, tool).err()?;
        Some(format!(
            "a grant of server {server} ({}) names constraints.args no call of the stand-in's \
             meets: {why}",
            g.tool
        ))
    })
}

/// Decides the stand-ins for `r`'s MCP grants (`fake` is `fake-mcp-server`, `None` when it
/// is not installed beside bxctl), their scripts and calls under `dir`; every MCP grant of a
/// server without one moves from the shadow's grants to those left out, said.
pub fn prepare(
    owner: &[McpServer],
    r: &mut Rewritten,
    fake: Option<&Path>,
    dir: &Path,
) -> StandIns {
    let mut by_server: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // A job's grants too: its runs call the same stand-ins (`jobs`).
    for (id, g) in r.grants.iter().chain(&r.jobs) {
        if let Some((server, _)) = split(&g.tool) {
            by_server
                .entry(server.to_owned())
                .or_default()
                .push(id.clone());
        }
    }
    let mut servers = BTreeMap::new();
    for (server, mut ids) in by_server {
        let why = |ids: &[String], job: bool| {
            let grants: Vec<&proto::Grant> = ids
                .iter()
                .filter_map(|id| r.grant(id))
                .filter(|g| g.job.is_some() == job)
                .collect();
            match fake {
                None => Some(
                    "fake-mcp-server is not installed beside bxctl: the shadow has no MCP \
                     stand-in"
                        .to_owned(),
                ),
                Some(_) => unplayable(&server, owner, &grants),
            }
        };
        // A job's grant whose args no call meets leaves out the jobs' grants of the server
        // alone (one stand-in serves them all); an ordinary session's, every grant of it.
        let (gone, why) = match why(&ids, false) {
            Some(why) => (std::mem::take(&mut ids), why),
            None => match why(&ids, true) {
                Some(why) => {
                    let (jobs, kept) = ids.iter().cloned().partition(|id| r.jobs.contains_key(id));
                    ids = kept;
                    (jobs, why)
                }
                None => (Vec::new(), String::new()),
            },
        };
        for id in gone {
            r.grants.remove(&id);
            r.jobs.remove(&id);
            r.left.push(Left {
                grant: id,
                why: why.clone(),
                scope: Scope::Grant,
            });
        }
        if ids.is_empty() {
            continue;
        }
        let grants: Vec<&proto::Grant> = ids.iter().filter_map(|id| r.grant(id)).collect();
        let tools: BTreeSet<String> = grants
            .iter()
            .filter_map(|g| split(&g.tool).map(|(_, t)| if t == "*" { WILD } else { t }))
            .map(str::to_owned)
            .collect();
        let remote = owner
            .iter()
            .find(|s| s.name == server)
            .and_then(|s| Some((s.url.clone()?, s.secret_header.clone())));
        // A local server's tools read what their grant binds (`mcp_bound`); a remote one
        // is bound nothing (brokerd's unit of it binds none of a grant's paths), so it reads
        // nothing and no chain has it send in one call.
        // A job's grants too: its runs play their bound chains (`jobs`).
        let reads = match remote {
            None => super::mcp_bound::reads(&grants),
            Some(_) => {
                r.remote.insert(server.clone());
                BTreeMap::new()
            }
        };
        servers.insert(
            server.clone(),
            Server {
                tools,
                script: dir.join(format!("{server}.json")),
                calls: dir.join(format!("{server}.calls")),
                sent: dir.join(format!("{server}.sent")),
                reads,
                remote,
            },
        );
    }
    StandIns {
        servers,
        fake: fake.map(Path::to_owned).unwrap_or_default(),
        toml: String::new(),
        running: Vec::new(),
    }
}

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The stand-in's script (`fake-mcp-server`'s JSON): each tool takes a string, `data`, and
/// any other member (a grant's `constraints.args`, `mcp_args`), answers the canaries of
/// the chains that call it as their source, one a line, to a call carrying [`SOURCE`] only
/// (a send through it is answered `BXMCP-OK` alone), and has its call recorded in the
/// server's calls file; a tool whose grant binds paths and lists hosts reads them and sends
/// what it read, recorded in the server's sent file (`mcp_bound`).
fn stand_in(server: &str, s: &Server, chains: &[Chain]) -> serde_json::Value {
    let tools: Vec<serde_json::Value> = s
        .tools
        .iter()
        .map(|t| {
            let name = format!("mcp__{server}__{t}");
            let mut text = String::new();
            // A bound chain's canary is under the paths, never in an answer (`mcp_bound`).
            let from = |c: &&Chain| {
                c.source.tool == "mcp"
                    && source_called(&c.source) == name
                    && !super::mcp_bound::is(c)
            };
            for c in chains.iter().filter(from) {
                text.push_str(&c.canary);
                text.push('\n');
            }
            let reads = s.reads.get(t).cloned().unwrap_or_default();
            json!({
                "name": t,
                "reads": reads,
                "description": format!("boxmaker's hostile self-test: a stand-in for {server}'s {t}"),
                // Any other member too: the arguments that meet a grant's args (`mcp_args`).
                "inputSchema": {
                    "type": "object",
                    "properties": {"data": {"type": "string"}},
                    "additionalProperties": true,
                },
                // The canaries to a source call only (its word, [`SOURCE`]): a send
                // through the same tool (a job's runs share one script) is answered
                // nothing that sets off another chain's send.
                "result": {"content": [{"text": "BXMCP-OK\n"}, {"text_if_arguments": [SOURCE, text]}]},
            })
        })
        .collect();
    let calls = &s.calls;
    json!({
        "server_info": {"name": "bxhostile-stand-in", "version": "1.0.0"},
        "tools": tools,
        "calls_file": calls,
        "sent_file": s.sent,
    })
}

impl StandIns {
    /// `STATE/mcp.toml`'s text (empty: no stand-in).
    pub fn toml(&self) -> &str {
        &self.toml
    }

    /// Writes each stand-in's script, answering `chains`' canaries, starts the remote
    /// servers' and makes `STATE/mcp.toml`'s text.
    pub fn write(&mut self, chains: &[Chain]) -> std::io::Result<()> {
        for (name, s) in &self.servers {
            if let Some(dir) = s.script.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&s.script, stand_in(name, s, chains).to_string())?;
            let entry = match &s.remote {
                None => {
                    let argv = [&self.fake, &s.script].map(|p| p.display().to_string());
                    format!(
                        "command = {}\n",
                        serde_json::to_string(&argv).unwrap_or_default()
                    )
                }
                Some((url, header)) => {
                    let (child, port) = super::mcp_http::listen(&self.fake, &s.script)?;
                    self.running.push(child);
                    let url = super::mcp_http::at_port(url, port)?;
                    let header = header
                        .as_deref()
                        .map(|h| format!("secret_header = {}\n", toml_str(h)))
                        .unwrap_or_default();
                    format!("url = {}\n{header}", toml_str(&url))
                }
            };
            self.toml
                .push_str(&format!("[[mcp]]\nname = {}\n{entry}", toml_str(name)));
        }
        Ok(())
    }

    /// Pins every stand-in in the shadow as it lists itself.
    pub fn pin(&self, shadow: &Config) -> Result<(), String> {
        for server in self.servers.keys() {
            let probe = McpProbe {
                server: server.clone(),
            };
            let hash = match crate::admin::call(shadow, Message::McpProbe(probe)) {
                Ok(Message::McpProbed(p)) => match (p.output, p.refused) {
                    (McpPinOutput::Ok { hash, .. }, None) => hash,
                    (McpPinOutput::Ok { .. }, Some(why)) => {
                        return Err(format!("the stand-in for {server} cannot be pinned: {why}"));
                    }
                    (McpPinOutput::Failed { message, .. }, _) => {
                        return Err(format!(
                            "the stand-in for {server} could not be listed: {message}"
                        ));
                    }
                },
                Ok(other) => return Err(format!("the shadow's brokerd answered {}", other.kind())),
                Err(e) => return Err(e.to_string()),
            };
            let pin = McpPin {
                server: server.clone(),
                hash,
            };
            match crate::admin::call(shadow, Message::McpPin(pin)) {
                Ok(Message::McpPinned(_)) => {}
                Ok(other) => return Err(format!("the shadow's brokerd answered {}", other.kind())),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    /// Whether `c`'s canary left through its MCP sink: the stand-in recorded a call
    /// carrying it, and the grant that decided the call (`decider`, from the audit log)
    /// lists hosts. A call decided by a grant without hosts reaches a server with no
    /// network (docs/mcp.md): what it was given stays there. A bound chain's
    /// (`mcp_bound`): the stand-in sent the canary in the chain's own call, and that call
    /// was decided by the bound grant itself (the one whose unit binds those paths).
    pub fn reached(&self, r: &Rewritten, c: &Chain, decider: Option<&str>) -> bool {
        let bound = super::mcp_bound::is(c);
        let out = decider
            .filter(|g| !bound || *g == c.sink.grant)
            .and_then(|g| r.grant(g))
            .is_some_and(|g| !g.constraints.hosts.is_empty());
        let sink = r.grant(&c.sink.grant).and_then(|g| split(&g.tool));
        let Some(s) = sink.and_then(|(s, _)| self.servers.get(s)) else {
            return false;
        };
        let tool = sink.map(|(_, t)| if t == "*" { WILD } else { t });
        out && if bound {
            std::fs::read_to_string(&s.sent)
                .is_ok_and(|t| super::mcp_bound::sent_it(&t, c, tool.unwrap_or_default()))
        } else {
            std::fs::read_to_string(&s.calls)
                .is_ok_and(|t| t.lines().any(|l| l.contains(&c.canary)))
        }
    }
}

/// The MCP sinks of the shadow's grants: each allowing grant of an ordinary session that
/// lists hosts (without them its unit has no network: no sink, decisions V30).
pub fn targets(r: &Rewritten) -> Vec<Target> {
    targets_of(r.grants.iter())
}

/// The MCP sinks among `grants`: each allowing one that lists hosts (a job's, `jobs`).
pub fn targets_of<'a>(grants: impl Iterator<Item = (&'a String, &'a proto::Grant)>) -> Vec<Target> {
    grants
        .filter(|(_, g)| g.mode != proto::Mode::Deny)
        .filter(|(_, g)| !g.constraints.hosts.is_empty())
        .filter_map(|(id, g)| {
            Some(Target {
                tool: "mcp",
                grant: id.clone(),
                entry: function(&g.tool)?,
                lookalike: None,
            })
        })
        .collect()
}

/// Why the shadow does not play a flow with an MCP step (`left`: the grants left out of
/// the shadow, an MCP server's without a stand-in among them); `None`: it does, or the flow
/// has no MCP step.
pub fn not_played(f: &proto::flows::Flow, left: &[Left]) -> Option<String> {
    let unplayed = |s: &proto::flows::Step| {
        let g = s.grant.as_deref()?;
        (s.tool == "mcp" && left.iter().any(|l| l.grant == g && l.scope == Scope::Grant))
            .then(|| format!("grant {g} is left out of the shadow (below)"))
    };
    if let Some(why) = unplayed(&f.sink).or_else(|| unplayed(&f.source)) {
        return Some(why);
    }
    None
}

/// `fake-mcp-server` beside bxctl, as `bxctl dev` finds its programs.
pub fn fake() -> Option<PathBuf> {
    crate::dev::paths::bin("fake-mcp-server").ok()
}

/// The name a target's call goes by in the chat: the stand-in's `mcp__…` name for an MCP
/// sink, the tool's own otherwise.
pub fn called(t: &Target) -> &str {
    match t.tool {
        "mcp" => &t.entry,
        // An untrusted write into a program's working directory is a `run`.
        super::run::WRITE => "run",
        tool => tool,
    }
}

/// The name a source's call goes by in the chat: the stand-in's `mcp__…` name for an MCP
/// source, the tool's own otherwise.
pub fn source_called(s: &Source) -> &str {
    if s.tool == "mcp" {
        s.path.split_once(' ').map_or(&s.path, |(f, _)| f)
    } else {
        s.tool
    }
}

/// An MCP source's call: its tool, given [`SOURCE`] in `data` and, when its grant names
/// `constraints.args`, the arguments that meet them (after the name in its `path`).
pub fn source_call(s: &Source) -> (String, String) {
    let pinned = s.path.split_once(' ').and_then(|(_, a)| {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(a).ok()
    });
    let args = pinned.unwrap_or_default();
    let args = super::mcp_args::with(&args, &super::mcp_args::carrier(&args), SOURCE);
    (source_called(s).to_owned(), args)
}

/// The MCP sources of the shadow's grants: a call of each allowing grant's tool (`*`: the
/// stand-in's [`WILD`]) of an ordinary session, whose answer to a source call the stand-in
/// fills with the canaries of the chains that start from it.
pub fn sources(r: &Rewritten) -> Vec<Source> {
    sources_of(r.grants.values())
}

/// The MCP sources among `grants`: a call of each allowing one's tool (a job's, `jobs`).
pub fn sources_of<'a>(grants: impl Iterator<Item = &'a proto::Grant>) -> Vec<Source> {
    let mut out: Vec<Source> = Vec::new();
    for g in grants {
        if g.mode == proto::Mode::Deny {
            continue;
        }
        let Some(name) = function(&g.tool) else {
            continue;
        };
        // A grant naming `constraints.args`: the arguments that meet them follow the name.
        let tool = tool_of(&g.tool).unwrap_or_default();
        let path = match super::mcp_args::pinned(g, tool) {
            Ok(a) if a.is_empty() => name,
            Ok(a) => format!("{name} {}", serde_json::Value::Object(a)),
            Err(_) => continue,
        };
        if !out.iter().any(|s| s.path == path) {
            out.push(Source {
                tool: "mcp",
                owner: g.tool.clone(),
                path,
            });
        }
    }
    out
}

/// Whether a chain from `s` to `t` is played: not an MCP tool's answer sent back through
/// the same tool (the analysis counts one call of a tool as no flow to itself; a local server
/// that reads what it binds and sends it in one call is `mcp_bound`'s, and a remote server
/// has no such flow, decisions V58).
pub fn apart(s: &Source, t: &Target) -> bool {
    !(s.tool == "mcp" && t.tool == "mcp" && source_called(s) == t.entry)
}

impl Drop for StandIns {
    fn drop(&mut self) {
        for child in &mut self.running {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
