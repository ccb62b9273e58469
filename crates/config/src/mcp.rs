//! `[[mcp]]`: the MCP servers whose tools the model may be offered (docs/mcp.md). brokerd
//! starts each per call in a unit of its own; a server's tools are offered only once the
//! owner has pinned them (`bxctl mcp pin NAME`, or a pin file the configuration names).
//!
//! ```toml
//! [[mcp]]
//! name = "time"
//! command = ["/opt/mcp/bin/mcp-server-time", "--local-timezone", "UTC"]
//! env = { TZ = "UTC" }
//! binds = ["/opt/mcp"]
//!
//! [[mcp]]
//! name = "remote"
//! url = "http://mcp.example.org:8080/mcp"
//! ```
//!
//! A server is either a `command` (started per call as the tool's child, over stdio) or a
//! `url` (reached per call over Streamable HTTP from the call's unit, at the addresses
//! brokerd resolved for the URL's host; docs/decisions.md P21), over `http://` or
//! `https://` (rustls, the webpki roots only).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// Its tools are offered as `mcp__<name>__<tool>`, granted as `mcp:<name>/<tool>`: 1 to
    /// 24 of `a-z`, `0-9` and `-`, not starting with `-`.
    pub name: String,
    /// The program (an absolute path; under `bxctl dev` a name on `PATH` too) and its
    /// arguments. Exactly one of `command` and `url`.
    #[serde(default)]
    pub command: Vec<String>,
    /// A remote server's Streamable HTTP endpoint, `http[s]://host[:port]/path`. Exactly one
    /// of `command` and `url`; a remote server takes no `env`, `secret_env` or `binds`.
    #[serde(default)]
    pub url: Option<String>,
    /// A remote server's HTTP header that carries the deciding grant's `secret` (its
    /// content as is, `Bearer …` when the server wants that), read from the unit's
    /// credentials; never written in the configuration or the invocation.
    #[serde(default)]
    pub secret_header: Option<String>,
    /// Environment variables the server gets (beside `PATH`), by value.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The variable that receives the deciding grant's `secret` (its content, read from the
    /// unit's credentials; never written in the configuration or the invocation).
    #[serde(default)]
    pub secret_env: Option<String>,
    /// What the server's unit binds read-only besides `broker.sandbox_binds`: its closure
    /// outside them (a virtualenv, a `node_modules`). On NixOS `/nix/store` is bound
    /// already.
    #[serde(default)]
    pub binds: Vec<PathBuf>,
    /// The pin as a file the configuration names (the NixOS module's `pin`); absent:
    /// `<home>/mcp/<name>.json`, which `bxctl mcp pin` writes.
    #[serde(default)]
    pub pin: Option<PathBuf>,
}

impl McpServer {
    /// The pin file brokerd reads for this server.
    pub fn pin_file(&self, mcp_dir: &Path) -> PathBuf {
        self.pin
            .clone()
            .unwrap_or_else(|| mcp_dir.join(format!("{}.json", self.name)))
    }
}

/// What is wrong with an `[[mcp]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpInvalid {
    #[error(
        "[[mcp]] name {name:?} must be 1 to 24 of a-z, 0-9 and -, not starting with - \
         (its tools are offered as mcp__<name>__<tool>)"
    )]
    Name { name: String },
    #[error("[[mcp]] {name:?} is named twice")]
    Duplicate { name: String },
    #[error("[[mcp]] {name:?}: command must name the program, as a non-empty list")]
    NoCommand { name: String },
    #[error(
        "[[mcp]] {name:?}: give exactly one of command (a server started per call) and url \
         (a remote server over Streamable HTTP)"
    )]
    CommandOrUrl { name: String },
    #[error(
        "[[mcp]] {name:?}: url {url:?} must be http:// or https://host[:port][/path], \
         without user information, spaces or a fragment"
    )]
    Url { name: String, url: String },
    #[error(
        "[[mcp]] {name:?}: {field} is for a server started by command; a remote server (url) \
         takes none"
    )]
    NotForUrl { name: String, field: &'static str },
    #[error("[[mcp]] {name:?}: secret_header is for a remote server (url)")]
    HeaderNeedsUrl { name: String },
    #[error(
        "[[mcp]] {name:?}: secret_header {header:?} must be a header name (A-Z, a-z, 0-9 \
         and -) other than one the transport sets itself"
    )]
    Header { name: String, header: String },
    #[error(
        "[[mcp]] {name:?}: {var:?} is no environment variable name (A-Z, a-z, 0-9 \
         and _, not starting with a digit)"
    )]
    EnvName { name: String, var: String },
    #[error("[[mcp]] {name:?}: {} must be an absolute path", path.display())]
    NotAbsolute { name: String, path: PathBuf },
}

fn server_name_ok(name: &str) -> bool {
    (1..=24).contains(&name.len())
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The headers the transport writes itself: a secret never replaces one of them.
const TRANSPORT_HEADERS: [&str; 8] = [
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "accept",
    "connection",
    "mcp-session-id",
    "mcp-protocol-version",
];

fn header_ok(header: &str) -> bool {
    !header.is_empty()
        && header.len() <= 64
        && header
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !TRANSPORT_HEADERS.contains(&header.to_ascii_lowercase().as_str())
}

fn env_name_ok(var: &str) -> bool {
    !var.is_empty()
        && !var.as_bytes()[0].is_ascii_digit()
        && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A file of `[[mcp]]` entries and nothing else (`bxctl dev`'s `mcp.toml`), parsed as the
/// configuration's own; what they mean is checked with the configuration they join.
pub fn mcp_file(text: &str) -> Result<Vec<McpServer>, proto::TomlError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct McpFile {
        #[serde(default)]
        mcp: Vec<McpServer>,
    }
    proto::from_toml::<McpFile>(text).map(|f| f.mcp)
}

pub(super) fn validate(servers: &[McpServer]) -> Result<(), McpInvalid> {
    for (i, s) in servers.iter().enumerate() {
        let name = || s.name.clone();
        if !server_name_ok(&s.name) {
            return Err(McpInvalid::Name { name: name() });
        }
        if servers[..i].iter().any(|o| o.name == s.name) {
            return Err(McpInvalid::Duplicate { name: name() });
        }
        match &s.url {
            Some(_) if !s.command.is_empty() => {
                return Err(McpInvalid::CommandOrUrl { name: name() });
            }
            Some(url) => remote(s, url)?,
            None if s.secret_header.is_some() => {
                return Err(McpInvalid::HeaderNeedsUrl { name: name() });
            }
            None if s.command.is_empty() => {
                return Err(McpInvalid::CommandOrUrl { name: name() });
            }
            None if s.command[0].is_empty() => {
                return Err(McpInvalid::NoCommand { name: name() });
            }
            None => {}
        }
        if let Some(var) = s
            .env
            .keys()
            .chain(s.secret_env.iter())
            .find(|v| !env_name_ok(v))
        {
            return Err(McpInvalid::EnvName {
                name: name(),
                var: var.clone(),
            });
        }
        if let Some(path) = s
            .binds
            .iter()
            .chain(s.pin.iter())
            .find(|p| !p.is_absolute())
        {
            return Err(McpInvalid::NotAbsolute {
                name: name(),
                path: path.clone(),
            });
        }
    }
    Ok(())
}

/// A remote server's entry: an `http://` URL with a host, and nothing of a started one.
fn remote(s: &McpServer, url: &str) -> Result<(), McpInvalid> {
    let name = || s.name.clone();
    let bad = || McpInvalid::Url {
        name: name(),
        url: url.to_owned(),
    };
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return Err(bad());
    };
    let authority = rest.split('/').next().unwrap_or("");
    let clean = url
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'#' && b != b'\\');
    if !clean
        || authority.is_empty()
        || authority.contains(['@', '?'])
        || authority.starts_with(':')
    {
        return Err(bad());
    }
    if let Some(header) = &s.secret_header
        && !header_ok(header)
    {
        return Err(McpInvalid::Header {
            name: name(),
            header: header.clone(),
        });
    }
    for (field, given) in [
        ("env", !s.env.is_empty()),
        ("secret_env", s.secret_env.is_some()),
        ("binds", !s.binds.is_empty()),
    ] {
        if given {
            return Err(McpInvalid::NotForUrl {
                name: name(),
                field,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
