//! The names the model sees: each pinned tool is offered as `mcp__<server>__<tool>`.
//!
//! An offered name must be a name every backend takes: OpenAI's function names are
//! `^[a-zA-Z0-9_-]{1,64}$`, and llama.cpp's server passes the name through its templates
//! and grammars, where that set is safe. A server name is 1 to [`MAX_SERVER`] of `a-z`,
//! `0-9` and `-` (no `_`, so the first `__` after the prefix always ends it); a tool name
//! is the server's, which must be of `a-zA-Z0-9_-`. Two pinned tools that would be offered
//! under the same name are refused, and so is any name of boxmaker's own tools.

use std::collections::BTreeSet;

/// Every offered MCP tool's name starts with this.
pub const PREFIX: &str = "mcp__";
/// Between the server's name and the tool's.
pub const SEPARATOR: &str = "__";
/// The longest name a model is offered.
pub const MAX_OFFERED: usize = 64;
/// The longest server name.
pub const MAX_SERVER: usize = 24;

/// Why a name cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The server's name in the configuration.
    #[error(
        "the MCP server name {name:?} must be 1 to {MAX_SERVER} of a-z, 0-9 and -, \
         starting with a letter or digit"
    )]
    Server { name: String },
    /// A tool name with a character outside `a-zA-Z0-9_-` (or empty).
    #[error(
        "server {server}: the tool name {tool:?} has characters a model's tool name \
         cannot hold (only a-z, A-Z, 0-9, _ and -)"
    )]
    Tool { server: String, tool: String },
    /// The offered name would be longer than [`MAX_OFFERED`].
    #[error(
        "the tool would be offered as {offered:?}, longer than the {MAX_OFFERED} \
         characters a model's tool name may have"
    )]
    TooLong { offered: String },
    /// Two tools would be offered under one name.
    #[error("two tools would be offered as {offered:?}")]
    Collision { offered: String },
}

/// Checks a server's name.
pub fn check_server(name: &str) -> Result<(), NameError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_SERVER
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(NameError::Server {
            name: name.to_owned(),
        })
    }
}

/// The name `tool` of `server` is offered under.
pub fn offered(server: &str, tool: &str) -> Result<String, NameError> {
    check_server(server)?;
    let ok = !tool.is_empty()
        && tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(NameError::Tool {
            server: server.to_owned(),
            tool: tool.chars().take(80).collect(),
        });
    }
    let name = format!("{PREFIX}{server}{SEPARATOR}{tool}");
    if name.len() > MAX_OFFERED {
        return Err(NameError::TooLong { offered: name });
    }
    Ok(name)
}

/// The server and tool an offered name stands for; `None` for a name that is not one.
pub fn parse_offered(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (server, tool) = rest.split_once(SEPARATOR)?;
    match offered(server, tool) {
        Ok(back) if back == name => Some((server, tool)),
        _ => None,
    }
}

/// Checks that every `(server, tool)` is offered under a name of its own, none of them one
/// of `builtin` (boxmaker's own tools), and returns the names in order.
pub fn check_all<'a>(
    tools: impl IntoIterator<Item = (&'a str, &'a str)>,
    builtin: &[&str],
) -> Result<Vec<String>, NameError> {
    let mut seen: BTreeSet<String> = builtin.iter().map(|b| (*b).to_owned()).collect();
    let mut names = Vec::new();
    for (server, tool) in tools {
        let name = offered(server, tool)?;
        if !seen.insert(name.clone()) {
            return Err(NameError::Collision { offered: name });
        }
        names.push(name);
    }
    Ok(names)
}
