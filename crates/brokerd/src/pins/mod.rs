//! MCP servers and their pins: the configured servers (`[[mcp]]`), each server's pin as
//! brokerd loads it at start and reload, what the model is offered (boxmaker's own tools
//! and every pinned tool, `tools_offered`), the owner's probe held until the owner pins it
//! (`bxctl mcp pin`, `owner`), and the servers a call found changed since their pin.
//!
//! A server without a pin file offers nothing. A pin file that does not read (edited by
//! hand, a schema keyword the validator does not support, another server's) refuses the
//! start, and a reload keeps the pins in force. A call that finds the server's tools changed
//! marks the server: its calls are refused (`mcp_changed`) until the owner pins it again.

pub mod owner;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use config::{Config, McpServer};
use daemon::lock;
use mcp::pin::PinnedTool;
use mcp::{Pin, PinError};
use proto::Hash32;
use proto::mcp::{McpListing, McpServerState, ToolsOffered};

/// Why the pins cannot be loaded. Each text is whole (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum PinsError {
    #[error("MCP pin {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("MCP pin {}: {error}", path.display())]
    Pin { path: PathBuf, error: PinError },
    #[error(
        "MCP pin {}: it pins server {stated:?}, not {expected:?}",
        path.display()
    )]
    OtherServer {
        path: PathBuf,
        stated: String,
        expected: String,
    },
    #[error("MCP pins: {0}")]
    Names(mcp::names::NameError),
}

/// The pins in force, and what they offer.
#[derive(Debug)]
pub struct PinSet {
    pins: BTreeMap<String, Pin>,
    offered: ToolsOffered,
}

impl PinSet {
    fn new(pins: BTreeMap<String, Pin>) -> Result<Self, PinsError> {
        mcp::names::check_all(
            pins.values()
                .flat_map(|p| p.tools.iter().map(|t| (p.server.as_str(), t.name.as_str()))),
            &proto::tools::TOOL_NAMES,
        )
        .map_err(PinsError::Names)?;
        let functions = pins
            .values()
            .flat_map(|p| {
                p.tools.iter().map(|t| {
                    // Every name was checked just above.
                    let name = mcp::names::offered(&p.server, &t.name).unwrap_or_default();
                    proto::attest::mcp_function(&name, t.description.as_deref(), &t.input_schema)
                })
            })
            .collect();
        let tools = proto::attest::offered(functions);
        let offered = ToolsOffered {
            tools: String::from_utf8_lossy(&proto::attest::canonical::canonical_json(&tools))
                .into_owned(),
            hash: proto::attest::hash_of(&tools),
        };
        Ok(Self { pins, offered })
    }

    /// The pinned tool an offered name (`mcp__<server>__<tool>`) stands for, with its
    /// server's pin hash; `None` for a name that is not one, or not pinned.
    pub fn lookup(&self, offered: &str) -> Option<(&str, &PinnedTool, Hash32)> {
        let (server, tool) = mcp::names::parse_offered(offered)?;
        let pin = self.pins.get(server)?;
        Some((pin.server.as_str(), pin.tool(tool)?, pin.hash))
    }
}

/// The configured servers and their pins.
#[derive(Debug)]
pub struct Pins {
    servers: Vec<McpServer>,
    dir: PathBuf,
    set: RwLock<Arc<PinSet>>,
    /// Each server's last probe that can be pinned, until the owner pins it.
    probes: Mutex<BTreeMap<String, Pin>>,
    /// The hash a call found instead of the pin's, by server.
    changed: Mutex<BTreeMap<String, Hash32>>,
}

impl Pins {
    /// Reads every configured server's pin file (a missing one of `<home>/mcp` means the
    /// server is not pinned yet; one the configuration names must be there).
    pub fn load(config: &Config) -> Result<Self, PinsError> {
        let dir = config.mcp_dir();
        let set = read_all(&config.mcp, &dir)?;
        Ok(Self {
            servers: config.mcp.clone(),
            dir,
            set: RwLock::new(Arc::new(set)),
            probes: Mutex::default(),
            changed: Mutex::default(),
        })
    }

    /// Reads the pin files again; a server whose pin changed is no longer marked changed.
    pub fn reload(&self) -> Result<(), PinsError> {
        let set = read_all(&self.servers, &self.dir)?;
        self.install(set);
        Ok(())
    }

    fn install(&self, set: PinSet) {
        let mut changed = lock(&self.changed);
        let old = self.current();
        changed.retain(|server, _| {
            old.pins.get(server).map(|p| p.hash) == set.pins.get(server).map(|p| p.hash)
        });
        *self
            .set
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(set);
    }

    pub fn current(&self) -> Arc<PinSet> {
        self.set
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// What a chat request may offer now.
    pub fn offered(&self) -> ToolsOffered {
        self.current().offered.clone()
    }

    pub fn server(&self, name: &str) -> Option<&McpServer> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The hash a call found for `server` instead of its pin's, if one did.
    pub fn changed(&self, server: &str) -> Option<Hash32> {
        lock(&self.changed).get(server).copied()
    }

    /// A call found `server`'s tools hashing to `found`, not to its pin.
    pub fn mark_changed(&self, server: &str, found: Hash32) {
        lock(&self.changed).insert(server.to_owned(), found);
    }

    /// Every configured server (or the one named, with its pin file's text).
    pub fn listing(&self, only: Option<&str>) -> McpListing {
        let set = self.current();
        let servers = self
            .servers
            .iter()
            .filter(|s| only.is_none_or(|o| o == s.name))
            .map(|s| {
                let pin = set.pins.get(&s.name);
                McpServerState {
                    name: s.name.clone(),
                    command: s.command.clone(),
                    url: s.url.clone(),
                    pin_file: s.pin_file(&self.dir).display().to_string(),
                    pin_configured: s.pin.is_some(),
                    hash: pin.map(|p| p.hash),
                    tools: pin.map_or_else(Vec::new, |p| {
                        p.tools
                            .iter()
                            .filter_map(|t| mcp::names::offered(&p.server, &t.name).ok())
                            .collect()
                    }),
                    changed: self.changed(&s.name),
                    pin: pin.filter(|_| only.is_some()).map(Pin::to_file),
                }
            })
            .collect();
        McpListing { servers }
    }
}

fn read_all(servers: &[McpServer], dir: &Path) -> Result<PinSet, PinsError> {
    let mut pins = BTreeMap::new();
    for s in servers {
        let path = s.pin_file(dir);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && s.pin.is_none() => continue,
            Err(error) => return Err(PinsError::Read { path, error }),
        };
        let pin = Pin::from_file(&bytes).map_err(|error| PinsError::Pin {
            path: path.clone(),
            error,
        })?;
        if pin.server != s.name {
            return Err(PinsError::OtherServer {
                path,
                stated: pin.server,
                expected: s.name.clone(),
            });
        }
        pins.insert(s.name.clone(), pin);
    }
    PinSet::new(pins)
}
