//! Each tool's argument schema, as types. brokerd parses the model's `arguments` text into
//! these (strictly: duplicate keys, unknown fields, wrong types and coercions are refused)
//! and the toolkit executes from the same types. A new tool is a new variant of [`ToolArgs`]
//! with its argument struct here.
//!
//! Field names within each struct are declared in sorted order, so that serialising a
//! value gives the canonical form: sorted keys, no whitespace.

use serde::{Deserialize, Serialize};

pub mod hands;
pub mod stage;

pub use hands::{EditFileArgs, RunArgs, WriteFileArgs, WriteMode};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpFetchArgs {
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsultArgs {
    pub prompt: String,
}

/// How `note_write` changes its note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteMode {
    /// The note becomes `text`, and takes the writer's label.
    Replace,
    /// `text` is added at the end, and the note keeps the higher of its label and the
    /// writer's.
    Append,
}

/// `note_write`: one note, named like a file in `memory/notes/` (see `crate::notes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteWriteArgs {
    pub mode: NoteMode,
    pub name: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteReadArgs {
    pub name: String,
}

/// `note_list` takes no arguments: `{}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteListArgs {}

/// `note_search`: a full-text query (FTS5 syntax) over the notes its grant reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteSearchArgs {
    pub query: String,
}

/// `session_search`: a full-text query (FTS5 syntax) over the session logs its grant
/// reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSearchArgs {
    pub query: String,
}

/// A validated tool call: `{"tool":"read_file","arguments":{"path":"/x"}}` on the tool's
/// stdin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "tool",
    content = "arguments",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum ToolArgs {
    ReadFile(ReadFileArgs),
    ListDir(ListDirArgs),
    HttpFetch(HttpFetchArgs),
    Consult(ConsultArgs),
    NoteWrite(NoteWriteArgs),
    NoteRead(NoteReadArgs),
    NoteList(NoteListArgs),
    NoteSearch(NoteSearchArgs),
    SessionSearch(SessionSearchArgs),
    /// A pinned MCP tool's call (`mcp__<server>__<tool>`): made by brokerd from the pin,
    /// never by [`ToolArgs::parse`]; it runs as `boxmaker-tool mcp-call`.
    Mcp(crate::mcp::McpArgs),
    WriteFile(WriteFileArgs),
    EditFile(EditFileArgs),
    Run(RunArgs),
}

/// The longest arguments text accepted. Arguments are shown whole on approval cards and
/// kept whole in the audit log, so they stay far below a frame.
pub const MAX_ARGUMENTS: usize = 64 * 1024;

/// Every tool boxmaker knows, by its wire name.
pub const TOOL_NAMES: [&str; 12] = [
    "read_file",
    "list_dir",
    "http_fetch",
    "consult",
    "note_write",
    "note_read",
    "note_list",
    "note_search",
    "session_search",
    "write_file",
    "edit_file",
    "run",
];

impl ToolArgs {
    /// Parses the model's arguments text for `tool`. The text must be one JSON object with
    /// exactly the tool's fields, each of its declared type.
    pub fn parse(tool: &str, arguments: &str) -> Result<Self, ArgsError> {
        if arguments.len() > MAX_ARGUMENTS {
            return Err(ArgsError::Invalid {
                tool: tool.to_owned(),
                detail: format!("the arguments are over {MAX_ARGUMENTS} bytes"),
            });
        }
        fn strict<T: serde::de::DeserializeOwned>(tool: &str, text: &str) -> Result<T, ArgsError> {
            // serde's derived structs also accept a JSON array of the field values in
            // order; the model's arguments must be an object, so refuse anything else first.
            if !crate::frame::starts_with_object(text.as_bytes()) {
                return Err(ArgsError::Invalid {
                    tool: tool.to_owned(),
                    detail: "invalid type: the arguments must be a JSON object".into(),
                });
            }
            serde_json::from_str(text).map_err(|e| ArgsError::Invalid {
                tool: tool.to_owned(),
                detail: e.to_string(),
            })
        }
        Ok(match tool {
            "read_file" => Self::ReadFile(strict(tool, arguments)?),
            "list_dir" => Self::ListDir(strict(tool, arguments)?),
            "http_fetch" => Self::HttpFetch(strict(tool, arguments)?),
            "consult" => Self::Consult(strict(tool, arguments)?),
            "note_write" => Self::NoteWrite(named(tool, strict(tool, arguments)?)?),
            "note_read" => Self::NoteRead(named(tool, strict(tool, arguments)?)?),
            "note_list" => Self::NoteList(strict(tool, arguments)?),
            "note_search" => Self::NoteSearch(strict(tool, arguments)?),
            "session_search" => Self::SessionSearch(strict(tool, arguments)?),
            "write_file" => {
                let a: WriteFileArgs = strict(tool, arguments)?;
                checked(tool, a.check())?;
                Self::WriteFile(a)
            }
            "edit_file" => {
                let a: EditFileArgs = strict(tool, arguments)?;
                checked(tool, a.check())?;
                Self::EditFile(a)
            }
            "run" => {
                let a: RunArgs = strict(tool, arguments)?;
                checked(tool, a.check())?;
                Self::Run(a)
            }
            other => return Err(ArgsError::UnknownTool(other.to_owned())),
        })
    }

    pub fn tool(&self) -> &'static str {
        match self {
            Self::ReadFile(_) => "read_file",
            Self::ListDir(_) => "list_dir",
            Self::HttpFetch(_) => "http_fetch",
            Self::Consult(_) => "consult",
            Self::NoteWrite(_) => "note_write",
            Self::NoteRead(_) => "note_read",
            Self::NoteList(_) => "note_list",
            Self::NoteSearch(_) => "note_search",
            Self::SessionSearch(_) => "session_search",
            Self::WriteFile(_) => "write_file",
            Self::EditFile(_) => "edit_file",
            Self::Run(_) => "run",
            Self::Mcp(_) => "mcp",
        }
    }

    /// The name grants give the tool: its wire name, or `mcp:<server>/<tool>`.
    pub fn grant_tool(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Self::Mcp(a) => a.grant_tool().into(),
            other => other.tool().into(),
        }
    }

    /// The canonical arguments text: the fields in sorted order, no whitespace. Constraints
    /// match it, approvals bind to it and the audit record keeps it next to the raw text.
    pub fn canonical(&self) -> String {
        let text = match self {
            Self::ReadFile(a) => serde_json::to_string(a),
            Self::ListDir(a) => serde_json::to_string(a),
            Self::HttpFetch(a) => serde_json::to_string(a),
            Self::Consult(a) => serde_json::to_string(a),
            Self::NoteWrite(a) => serde_json::to_string(a),
            Self::NoteRead(a) => serde_json::to_string(a),
            Self::NoteList(a) => serde_json::to_string(a),
            Self::NoteSearch(a) => serde_json::to_string(a),
            Self::SessionSearch(a) => serde_json::to_string(a),
            // Checked against the pinned schema and made canonical by brokerd.
            Self::Mcp(a) => return a.arguments.clone(),
            Self::WriteFile(a) => serde_json::to_string(a),
            Self::EditFile(a) => serde_json::to_string(a),
            Self::Run(a) => serde_json::to_string(a),
        };
        // Serialising plain structs of strings cannot fail.
        text.unwrap_or_default()
    }

    /// What the call reads, for approval cards: the path or the URL, at most
    /// [`MAX_READ`](crate::approval::MAX_READ) characters (a longer one ends in `…`).
    /// For a note tool, the note's name; for a write, the path it writes; for `run`, the
    /// program's name. `None` for `consult` and `note_list`, which read nothing named.
    pub fn reads(&self) -> Option<String> {
        let what = match self {
            Self::ReadFile(a) => &a.path,
            Self::ListDir(a) => &a.path,
            Self::HttpFetch(a) => &a.url,
            Self::NoteSearch(a) => &a.query,
            Self::SessionSearch(a) => &a.query,
            Self::WriteFile(a) => &a.path,
            Self::EditFile(a) => &a.path,
            Self::Run(a) => &a.program,
            Self::NoteWrite(NoteWriteArgs { name, .. }) | Self::NoteRead(NoteReadArgs { name }) => {
                name
            }
            Self::Consult(_) | Self::NoteList(_) | Self::Mcp(_) => return None,
        };
        let max = crate::approval::MAX_READ;
        Some(if what.chars().count() <= max {
            what.clone()
        } else {
            what.chars().take(max - 1).collect::<String>() + "…"
        })
    }
}

/// A note tool's name, checked like a path before any grant sees it.
trait Named {
    fn name(&self) -> &str;
}

impl Named for NoteWriteArgs {
    fn name(&self) -> &str {
        &self.name
    }
}

impl Named for NoteReadArgs {
    fn name(&self) -> &str {
        &self.name
    }
}

fn checked(tool: &str, result: Result<(), hands::HandsArgsError>) -> Result<(), ArgsError> {
    result.map_err(|e| ArgsError::Invalid {
        tool: tool.to_owned(),
        detail: e.to_string(),
    })
}

fn named<T: Named>(tool: &str, args: T) -> Result<T, ArgsError> {
    crate::notes::check_name(args.name()).map_err(|e| ArgsError::Invalid {
        tool: tool.to_owned(),
        detail: e.to_string(),
    })?;
    Ok(args)
}

/// Why the model's arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("no tool is named {0:?}")]
    UnknownTool(String),
    #[error("arguments for {tool}: {detail}")]
    Invalid { tool: String, detail: String },
}
