//! The pin of one server: what the owner saw and accepted, and the hash a call checks the
//! server's live `tools/list` against.
//!
//! The hash is SHA-256 over the canonical JSON ([`crate::json::canonical`]) of the list of
//! tools sorted by name, each `{"description":…,"inputSchema":…,"name":…}` (no
//! `description` member when the server gave none): exactly what the model is offered.
//! Anything else the server says of a tool (a title, annotations, an output schema) is not
//! offered and not pinned. [`tools_hash`] is the one function that computes it, at pin time
//! and at every call.
//!
//! A pin file is one JSON object, parsed strictly (duplicate keys, unknown members, a hash
//! that does not match its tools, an invalid name or an unsupported schema refuse it):
//!
//! ```json
//! {"format":"boxmaker-mcp-pin/1","server":"time","protocol_version":"2025-11-25",
//!  "server_info":{"name":"mcp-time","version":"2026.10.19"},
//!  "tools":[{"name":"get_current_time","description":"…","input_schema":{…}}],
//!  "hash":"…64 hex digits…"}
//! ```

use proto::Hash32;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::client::{ListedTool, ServerInfo};
use crate::json::{canonical, parse_strict};
use crate::names::{NameError, check_all, check_server};
use crate::schema::{Schema, SchemaError};

/// The `format` member of every pin file this crate writes and reads.
pub const FORMAT: &str = "boxmaker-mcp-pin/1";
/// The largest pin file read.
pub const MAX_PIN_FILE: usize = 4 << 20;

/// One pinned server.
#[derive(Debug, Clone, PartialEq)]
pub struct Pin {
    pub server: String,
    pub protocol_version: String,
    pub server_name: String,
    pub server_version: String,
    pub tools: Vec<PinnedTool>,
    pub hash: Hash32,
}

/// One pinned tool: what the model is offered, and the compiled schema its arguments are
/// checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct PinnedTool {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
    pub schema: Schema,
}

/// Why a pin cannot be made or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// Not JSON, or not a pin's members.
    #[error("not a pin file: {detail}")]
    Format { detail: String },
    /// The file is larger than [`MAX_PIN_FILE`].
    #[error("the pin file is larger than {MAX_PIN_FILE} bytes")]
    TooLarge,
    #[error("{0}")]
    Name(NameError),
    /// A tool's input schema is outside the supported subset.
    #[error("tool {tool:?}: {error}")]
    Schema { tool: String, error: SchemaError },
    /// The hash in the file is not the hash of its tools.
    #[error(
        "the pin's hash {stated} is not the hash of its tools ({computed}): the file \
         was changed after it was written"
    )]
    Hash { stated: Hash32, computed: Hash32 },
}

/// The canonical JSON of a tool list as it is pinned: each tool's offered members, sorted
/// by name (see the module's note).
pub fn canonical_tools(tools: &[ListedTool]) -> String {
    let mut sorted: Vec<&ListedTool> = tools.iter().collect();
    sorted.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let list: Vec<Value> = sorted.into_iter().map(offered_json).collect();
    canonical(&Value::Array(list))
}

/// The hash of a tool list: SHA-256 of [`canonical_tools`]. Pagination and order do not
/// change it.
pub fn tools_hash(tools: &[ListedTool]) -> Hash32 {
    Hash32::digest(canonical_tools(tools).as_bytes())
}

fn offered_json(tool: &ListedTool) -> Value {
    let mut map = Map::new();
    map.insert("name".into(), json!(tool.name));
    if let Some(d) = &tool.description {
        map.insert("description".into(), json!(d));
    }
    map.insert("inputSchema".into(), tool.input_schema.clone());
    Value::Object(map)
}

impl Pin {
    /// Makes the pin of `server` from what `initialize` and `tools/list` gave: every name
    /// offerable and distinct, every schema within the subset.
    pub fn new(server: &str, info: &ServerInfo, tools: &[ListedTool]) -> Result<Self, PinError> {
        check_server(server).map_err(PinError::Name)?;
        check_all(
            tools.iter().map(|t| (server, t.name.as_str())),
            &proto::tools::TOOL_NAMES,
        )
        .map_err(PinError::Name)?;
        let mut pinned = Vec::with_capacity(tools.len());
        for tool in tools {
            let schema = Schema::compile(&tool.input_schema).map_err(|error| PinError::Schema {
                tool: tool.name.clone(),
                error,
            })?;
            pinned.push(PinnedTool {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
                schema,
            });
        }
        pinned.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(Self {
            server: server.to_owned(),
            protocol_version: info.protocol_version.clone(),
            server_name: info.name.clone(),
            server_version: info.version.clone(),
            tools: pinned,
            hash: tools_hash(tools),
        })
    }

    /// The tools as `tools/list` gave them, for [`tools_hash`].
    pub fn listed(&self) -> Vec<ListedTool> {
        self.tools
            .iter()
            .map(|t| ListedTool {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
            })
            .collect()
    }

    /// The pinned tool `name`, if any.
    pub fn tool(&self, name: &str) -> Option<&PinnedTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The pin file's text: the members in sorted order, indented for a person to read.
    pub fn to_file(&self) -> String {
        let file = PinFile {
            format: FORMAT.into(),
            hash: self.hash,
            protocol_version: self.protocol_version.clone(),
            server: self.server.clone(),
            server_info: PinServerInfo {
                name: self.server_name.clone(),
                version: self.server_version.clone(),
            },
            tools: self
                .tools
                .iter()
                .map(|t| PinFileTool {
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                    name: t.name.clone(),
                })
                .collect(),
        };
        // A struct of strings and JSON values: serialising cannot fail.
        let value = serde_json::to_value(&file).unwrap_or(Value::Null);
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads a pin file, strictly: everything [`Pin::new`] checks, and the stated hash.
    pub fn from_file(bytes: &[u8]) -> Result<Self, PinError> {
        if bytes.len() > MAX_PIN_FILE {
            return Err(PinError::TooLarge);
        }
        let format = |detail: String| PinError::Format { detail };
        let value = parse_strict(bytes).map_err(|e| format(e.to_string()))?;
        if !value.is_object() {
            return Err(format("a pin file is one JSON object".into()));
        }
        let file: PinFile = serde_json::from_value(value).map_err(|e| format(e.to_string()))?;
        if file.format != FORMAT {
            return Err(format(format!("format {:?}, not {FORMAT:?}", file.format)));
        }
        let info = ServerInfo {
            name: file.server_info.name,
            version: file.server_info.version,
            protocol_version: file.protocol_version,
            tools: true,
        };
        let listed: Vec<ListedTool> = file
            .tools
            .into_iter()
            .map(|t| ListedTool {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
            })
            .collect();
        let pin = Self::new(&file.server, &info, &listed)?;
        if pin.hash != file.hash {
            return Err(PinError::Hash {
                stated: file.hash,
                computed: pin.hash,
            });
        }
        Ok(pin)
    }
}

/// The file's members, in sorted order.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinFile {
    format: String,
    hash: Hash32,
    protocol_version: String,
    server: String,
    server_info: PinServerInfo,
    tools: Vec<PinFileTool>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinServerInfo {
    name: String,
    version: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinFileTool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    input_schema: Value,
    name: String,
}
