//! The owner's pin of a server (`bxctl mcp pin NAME`): brokerd lists the server's tools in
//! a unit of its own (`Pins::probed` takes what `boxmaker-tool mcp-pin` answered), holds
//! what could be pinned, and writes it only when the owner pins the list they were shown
//! (the same hash). The pin file is written durably under `<home>/mcp` and brokerd's pins
//! are read again, so the next request offers the new tools. A server whose pin the
//! configuration names (the NixOS module's `pin`) is not written here: its pin is the
//! owner's file.

use std::path::PathBuf;

use daemon::lock;
use mcp::json::parse_strict;
use mcp::{ListedTool, Pin, ServerInfo};
use proto::Hash32;
use proto::mcp::{McpPinOutput, McpProbed};
use serde_json::Value;

use super::{Pins, read_all};

/// Why the owner's pin was not written. Each text is whole (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum PinRefused {
    #[error("no MCP server is named {0:?} in the configuration ([[mcp]])")]
    Unknown(String),
    #[error(
        "the pin of {server:?} is the configuration's file {}: write the new pin there \
         (`bxctl mcp pin {server} --out FILE`)", file.display()
    )]
    Configured { server: String, file: PathBuf },
    #[error("no list of {0:?} waits to be pinned: run `bxctl mcp pin {0}` to see its tools first")]
    NoProbe(String),
    #[error(
        "the tools of {server:?} you were shown hash to {asked}, but the last list brokerd \
         holds hashes to {held}: look at them again"
    )]
    Other {
        server: String,
        asked: Hash32,
        held: Hash32,
    },
    #[error("writing {}: {error}", path.display())]
    Write { path: PathBuf, error: String },
    #[error("{0}")]
    Load(super::PinsError),
}

impl Pins {
    /// What the owner is shown of a probe of `server`, and the pin it would make (held for
    /// [`Pins::pin`]), or why it cannot be pinned.
    pub fn probed(&self, server: &str, output: McpPinOutput) -> McpProbed {
        let made = match &output {
            McpPinOutput::Ok {
                protocol_version,
                server_name,
                server_version,
                tools,
                hash,
                ..
            } => {
                let info = ServerInfo {
                    name: server_name.clone(),
                    version: server_version.clone(),
                    protocol_version: protocol_version.clone(),
                    tools: true,
                };
                listed(tools).and_then(|tools| {
                    let pin = Pin::new(server, &info, &tools).map_err(|e| e.to_string())?;
                    if pin.hash != *hash {
                        return Err(format!(
                            "the tool said its list hashes to {hash}, but it hashes to {}",
                            pin.hash
                        ));
                    }
                    Ok(pin)
                })
            }
            McpPinOutput::Failed { message, .. } => Err(message.clone()),
        };
        let mut probes = lock(&self.probes);
        match made {
            Ok(pin) => {
                let text = pin.to_file();
                probes.insert(server.to_owned(), pin);
                McpProbed {
                    server: server.to_owned(),
                    output,
                    pin: Some(text),
                    refused: None,
                }
            }
            Err(why) => {
                probes.remove(server);
                McpProbed {
                    server: server.to_owned(),
                    output,
                    pin: None,
                    refused: Some(why),
                }
            }
        }
    }

    /// Pins the list of `server` the owner was shown (`hash`): writes its pin file and
    /// reads the pins again. The pin written, and where.
    pub fn pin(&self, server: &str, hash: Hash32) -> Result<(Pin, PathBuf), PinRefused> {
        let config = self
            .server(server)
            .ok_or_else(|| PinRefused::Unknown(server.to_owned()))?;
        let path = config.pin_file(&self.dir);
        if config.pin.is_some() {
            return Err(PinRefused::Configured {
                server: server.to_owned(),
                file: path,
            });
        }
        let mut probes = lock(&self.probes);
        let held = probes
            .get(server)
            .ok_or_else(|| PinRefused::NoProbe(server.to_owned()))?;
        if held.hash != hash {
            return Err(PinRefused::Other {
                server: server.to_owned(),
                asked: hash,
                held: held.hash,
            });
        }
        let write = |error: String| PinRefused::Write {
            path: path.clone(),
            error,
        };
        std::fs::create_dir_all(&self.dir).map_err(|e| write(e.to_string()))?;
        let tmp = self.dir.join(format!(".{server}.json.tmp"));
        daemon::durable::replace_file(&path, &tmp, held.to_file().as_bytes(), 0o644)
            .map_err(|e| write(e.to_string()))?;
        let pin = held.clone();
        probes.remove(server);
        drop(probes);
        let set = read_all(&self.servers, &self.dir).map_err(PinRefused::Load)?;
        self.install(set);
        Ok((pin, path))
    }
}

/// The tool list `mcp-pin` answered (canonical JSON), read strictly.
fn listed(tools: &str) -> Result<Vec<ListedTool>, String> {
    let value = parse_strict(tools.as_bytes()).map_err(|e| e.to_string())?;
    let Value::Array(items) = value else {
        return Err("the tool list is not a JSON array".into());
    };
    items
        .into_iter()
        .map(|item| {
            let Value::Object(mut m) = item else {
                return Err("a tool is not a JSON object".into());
            };
            let name = match m.remove("name") {
                Some(Value::String(s)) => s,
                _ => return Err("a tool has no name".into()),
            };
            let description = match m.remove("description") {
                None => None,
                Some(Value::String(s)) => Some(s),
                Some(_) => return Err(format!("tool {name:?}: the description is not text")),
            };
            let input_schema = m
                .remove("inputSchema")
                .ok_or_else(|| format!("tool {name:?} has no input schema"))?;
            if let Some(extra) = m.keys().next() {
                return Err(format!("tool {name:?}: unknown member {extra:?}"));
            }
            Ok(ListedTool {
                name,
                description,
                input_schema,
            })
        })
        .collect()
}
