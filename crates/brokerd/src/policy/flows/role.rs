//! What each tool is to a flow: what a call of it reads, and whether it carries data out of
//! the session. An exhaustive `match` over [`ToolArgs`], no wildcard: a tool added to
//! `proto::tools` does not compile here until someone says whether it is a sink.

use proto::tools::ToolArgs;

use crate::policy::{Decision, Outcome};

/// Where a sink sends what the session holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// `http_fetch`: the URL (its path, its query) reaches the host.
    Egress,
    /// `consult`: the prompt reaches the remote model.
    Consult,
    /// An MCP tool whose grant lists hosts: the server's unit reaches them, and what the
    /// server sends there is its own (docs/mcp.md).
    Mcp,
    /// A `run` whose grant lists hosts: the program reaches them.
    Run,
}

/// One allowed call as a flow step: what it names, and how a sentence says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    /// The path, the host, the note: what the step names.
    pub what: String,
    /// As a source: the verb phrase ("read /srv/notes").
    pub reads: String,
    /// `Some` when the call carries data out.
    pub sink: Option<Sink>,
    /// Whether the call changes files of yours (the hands): what untrusted content can
    /// drive.
    pub writes: bool,
}

/// The role of an allowed call, with what its deciding grant covered. `consult` names the
/// host of `broker.consult.url` (`None`: no consult model configured).
pub fn of(decision: &Decision, consult: Option<&str>) -> Option<Role> {
    let args = decision.args()?;
    let host = decision.grant().and_then(|(g, c)| {
        let host = c.host.as_ref()?.to_string();
        // A host tried below a `*.` entry stands for every host there: say the entry.
        let listed = g.constraints.hosts.contains(&host);
        let below = host
            .split_once('.')
            .map(|(_, rest)| format!("*.{rest}"))
            .filter(|entry| !listed && g.constraints.hosts.contains(entry));
        Some(below.unwrap_or(host))
    });
    // The deciding grant: a program's hosts and workdir, a write's directory.
    let run_grant = decision.grant().map(|(g, _)| g);
    // brokerd consults only with a consult model configured and the deciding grant's
    // `secret` for its key (`run::tool_spec`): without either the call fails before anything
    // is sent, and it is no step of a flow (docs/decisions.md V36).
    if matches!(args, ToolArgs::Consult(_))
        && (consult.is_none() || run_grant.is_none_or(|g| g.secret.is_none()))
    {
        return None;
    }
    let consult = consult.map_or_else(
        || "the consult model".to_owned(),
        |h| format!("the consult model at {h}"),
    );
    let (what, reads, sink) = match args {
        ToolArgs::ReadFile(a) => (a.path.clone(), format!("read {}", a.path), None),
        ToolArgs::ListDir(a) => (a.path.clone(), format!("list {}", a.path), None),
        // A fetch's URL is chosen by the model: whatever it read can ride in it.
        ToolArgs::HttpFetch(a) => {
            let host = host.unwrap_or_else(|| a.url.clone());
            (
                host.clone(),
                format!("fetch from {host}"),
                Some(Sink::Egress),
            )
        }
        // A prompt is the model's words, sent whole to a model outside the box.
        ToolArgs::Consult(_) => (
            consult.clone(),
            format!("ask {consult}"),
            Some(Sink::Consult),
        ),
        // A note takes the label of the session that writes it and raises every reader by
        // it (docs/memory.md): what a write puts in the box reads back no lower.
        ToolArgs::NoteWrite(_) => ("the notes".into(), "write a note".into(), None),
        // Any note the grant covers: the name tried is a sample.
        ToolArgs::NoteRead(_) => ("the notes".into(), "read the notes".into(), None),
        ToolArgs::NoteList(_) => ("the notes".into(), "list the notes".into(), None),
        ToolArgs::NoteSearch(_) => ("the notes".into(), "search the notes".into(), None),
        // An MCP server is code of its own that gets the arguments whole; its unit reaches
        // the network only when the deciding grant lists hosts, and then only those. Without
        // them it has no network and binds read-only (docs/mcp.md): nothing leaves. A remote
        // server (`[[mcp]] url`) is reached only when the grant lists its URL's host
        // (decisions P21): a call under a grant that does not runs nothing, and the analysis
        // drops it before this (`source::runs`); one that does is this sink.
        ToolArgs::Mcp(a) => {
            // Said as the deciding grant names it (`mcp:<server>/*` for any of its tools).
            let (tool, hosts) = decision.grant().map_or_else(
                || (a.grant_tool(), String::new()),
                |(g, _)| (g.tool.clone(), g.constraints.hosts.join(", ")),
            );
            let reads = format!("call MCP tool {tool}");
            if hosts.is_empty() {
                (tool, reads, None)
            } else {
                (
                    format!("{hosts} through MCP tool {tool}"),
                    reads,
                    Some(Sink::Mcp),
                )
            }
        }
        // A write never makes data read back lower: `decide_in` refuses a write down
        // (`write_down`) and an untrusted write where a grant says only the owner writes
        // (`untrusted_write`, docs/decisions.md H9). What it allows is a write of yours.
        ToolArgs::WriteFile(a) => {
            let root = root_of(run_grant, &a.path);
            (root.clone(), format!("write files under {root}"), None)
        }
        ToolArgs::EditFile(a) => {
            let root = root_of(run_grant, &a.path);
            (root.clone(), format!("edit files under {root}"), None)
        }
        // A program's unit reaches the network only when its grant lists hosts, and writes
        // only its grant's `workdir` (docs/tools.md).
        ToolArgs::Run(a) => {
            let hosts = run_grant
                .map(|g| g.constraints.hosts.join(", "))
                .unwrap_or_default();
            let reads = format!("run {}", a.program);
            if hosts.is_empty() {
                (a.program.clone(), reads, None)
            } else {
                (
                    format!("{hosts} through run {}", a.program),
                    reads,
                    Some(Sink::Run),
                )
            }
        }
        ToolArgs::SessionSearch(_) => (
            "the session logs".into(),
            "search the session logs".into(),
            None,
        ),
    };
    let writes = match args {
        ToolArgs::WriteFile(_) | ToolArgs::EditFile(_) => true,
        ToolArgs::Run(_) => run_grant.is_some_and(|g| g.constraints.workdir.is_some()),
        // A note is boxmaker's own: labelled by its writer, read back through brokerd alone.
        ToolArgs::NoteWrite(_)
        | ToolArgs::ReadFile(_)
        | ToolArgs::ListDir(_)
        | ToolArgs::HttpFetch(_)
        | ToolArgs::Consult(_)
        | ToolArgs::NoteRead(_)
        | ToolArgs::NoteList(_)
        | ToolArgs::NoteSearch(_)
        | ToolArgs::SessionSearch(_)
        | ToolArgs::Mcp(_) => false,
    };
    Some(Role {
        what,
        reads,
        sink,
        writes,
    })
}

/// The granted directory a write's path lies under (the call tried is a sample file there).
fn root_of(grant: Option<&proto::Grant>, path: &str) -> String {
    grant
        .and_then(|g| {
            g.constraints
                .paths
                .iter()
                .find(|root| grants::constraints::is_under(path, root))
        })
        .map_or_else(|| path.to_owned(), Clone::clone)
}

/// How a sentence says sending to a sink.
pub fn sends(sink: &Sink, what: &str) -> String {
    match sink {
        Sink::Egress | Sink::Consult | Sink::Mcp | Sink::Run => format!("send it to {what}"),
    }
}

/// The grant that allows `decision` without asking the owner: what a flow needs of each step.
pub fn unasked(decision: &Decision) -> Option<&str> {
    match decision.outcome() {
        Outcome::Allow {
            grant_id,
            approval: None,
        } => Some(grant_id),
        _ => None,
    }
}
