//! The tools as the model sees them: OpenAI-style function definitions whose parameters are
//! exactly the argument types in `proto::tools` (brokerd refuses anything else anyway), and
//! what the model reads of each answer.

use proto::{DataClass, ToolResponse};
use serde_json::{Value, json};

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
    ])
}

/// How a note is named (`proto::notes::check_name`).
const NOTE_NAME: &str = "The note's name: letters, digits, '.', '_' and '-', at most 100";

/// What the model reads of a tool's answer, and the labels brokerd gave it (loopd keeps
/// them for the owner's eyes only; brokerd holds the session's real taint).
pub fn for_model(r: &ToolResponse) -> (String, DataClass, bool, bool) {
    match r {
        ToolResponse::Result {
            content,
            class,
            untrusted,
            truncated,
        } => (content.clone(), *class, *untrusted, *truncated),
        ToolResponse::Denied { reason, detail } => {
            let detail = detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            (
                format!("denied by the owner's policy ({}){detail}", reason.as_str()),
                DataClass::Private,
                false,
                false,
            )
        }
        ToolResponse::Failed { message, .. } => (
            format!("the tool failed: {message}"),
            DataClass::Private,
            true,
            false,
        ),
        ToolResponse::PendingApproval { .. } => {
            ("no answer".into(), DataClass::Private, false, false)
        }
    }
}

/// How a call that gave no result ended, for the session log (the owner's eyes).
pub fn outcome(r: &ToolResponse) -> Option<proto::CallOutcome> {
    match r {
        ToolResponse::Denied { reason, .. } => Some(proto::CallOutcome::Denied { reason: *reason }),
        ToolResponse::Failed { .. } | ToolResponse::PendingApproval { .. } => {
            Some(proto::CallOutcome::Failed)
        }
        ToolResponse::Result { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_proto_tool_is_offered_once() {
        let defs = super::definitions();
        let names: Vec<&str> = defs
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| d["function"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, proto::tools::TOOL_NAMES);
    }
}
