//! The tools as the model sees them: OpenAI-style function definitions whose parameters are
//! exactly the argument types in `proto::tools` (brokerd refuses anything else anyway).
//! loopd offers exactly these, and inferproxy witnesses only a request whose `tools` hash as
//! these do ([`tools_hash`]).

use serde_json::{Value, json};

use crate::Hash32;

fn function(name: &str, description: &str, field: &str, about: &str) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": { field: { "type": "string", "description": about } },
                "required": [field],
                "additionalProperties": false
            }
        }
    })
}

/// Every tool boxmaker has, in `proto::tools::TOOL_NAMES` order.
pub fn definitions() -> Value {
    Value::Array(vec![
        function(
            "read_file",
            "Read a text file the owner has granted.",
            "path",
            "Absolute path of the file",
        ),
        function(
            "list_dir",
            "List a directory the owner has granted.",
            "path",
            "Absolute path of the directory",
        ),
        function(
            "http_fetch",
            "Fetch a web page (GET) from a host the owner has granted.",
            "url",
            "The http or https URL",
        ),
        function(
            "consult",
            "Ask a larger remote model a question.",
            "prompt",
            "The question, with all the context it needs",
        ),
        json!({
            "type": "function",
            "function": {
                "name": "note_write",
                "description": "Write one of your notes (kept across sessions): replace its \
                    text, or append to it.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "mode": { "type": "string", "enum": ["replace", "append"] },
                        "name": { "type": "string", "description": NOTE_NAME },
                        "text": { "type": "string", "description": "Markdown text" }
                    },
                    "required": ["mode", "name", "text"],
                    "additionalProperties": false
                }
            }
        }),
        function("note_read", "Read one of your notes.", "name", NOTE_NAME),
        json!({
            "type": "function",
            "function": {
                "name": "note_list",
                "description": "List the names of your notes.",
                "parameters": {
                    "type": "object",
                    "properties": {},
                    "additionalProperties": false
                }
            }
        }),
        function(
            "note_search",
            "Search your notes.",
            "query",
            "Words to find",
        ),
        function(
            "session_search",
            "Search your past conversations.",
            "query",
            "Words to find",
        ),
        object(
            "write_file",
            "Write a text file below a directory the owner has granted: create a new file, \
             replace a file's whole text, or append to it.",
            json!({
                "content": { "type": "string", "description": "The text to write" },
                "mode": { "type": "string", "enum": ["create", "replace", "append"] },
                "path": { "type": "string", "description": "Absolute path of the file" }
            }),
            &["content", "mode", "path"],
        ),
        object(
            "edit_file",
            "Edit a text file the owner has granted: the one place where `old` occurs, \
             exactly, becomes `new`. It fails if `old` occurs nowhere or more than once; \
             include enough text around the change to make it unique.",
            json!({
                "new": { "type": "string", "description": "The replacement text" },
                "old": { "type": "string", "description": "The exact text to replace" },
                "path": { "type": "string", "description": "Absolute path of the file" }
            }),
            &["new", "old", "path"],
        ),
        object(
            "run",
            "Run a program the owner has granted, with arguments (no shell: each argument \
             is passed as it is) and optional standard input.",
            json!({
                "args": {
                    "type": "array",
                    "items": { "type": "string" },
                    "description": "The arguments, one string each"
                },
                "program": { "type": "string", "description": "The granted program's name" },
                "stdin": { "type": "string", "description": "Text for its standard input" }
            }),
            &["args", "program"],
        ),
    ])
}

/// A tool whose parameters are several fields (`required` among them).
fn object(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false
            }
        }
    })
}

/// How a note is named (`proto::notes::check_name`).
const NOTE_NAME: &str = "The note's name: letters, digits, '.', '_' and '-', at most 100";

/// The hash of [`definitions`] in canonical form: what a witnessable request's `tools` must
/// hash to when no MCP tool is pinned.
pub fn tools_hash() -> Hash32 {
    static HASH: std::sync::OnceLock<Hash32> = std::sync::OnceLock::new();
    *HASH.get_or_init(|| hash_of(&definitions()))
}

/// The hash of a `tools` list in canonical form.
pub fn hash_of(tools: &Value) -> Hash32 {
    Hash32::digest(&super::canonical::canonical_json(tools))
}

/// One pinned MCP tool as the model is offered it: its offered name
/// (`mcp__<server>__<tool>`), the pinned description (when the server gave one) and the
/// pinned input schema as the parameters.
pub fn mcp_function(name: &str, description: Option<&str>, schema: &Value) -> Value {
    let mut function = serde_json::Map::new();
    function.insert("name".into(), json!(name));
    if let Some(d) = description {
        function.insert("description".into(), json!(d));
    }
    function.insert("parameters".into(), schema.clone());
    json!({ "type": "function", "function": Value::Object(function) })
}

/// boxmaker's own tools, then `mcp` (the pinned MCP tools, each [`mcp_function`], in the
/// order brokerd gives them): the `tools` a chat request offers.
pub fn offered(mcp: Vec<Value>) -> Value {
    let Value::Array(mut all) = definitions() else {
        unreachable!("definitions() is an array")
    };
    all.extend(mcp);
    Value::Array(all)
}
