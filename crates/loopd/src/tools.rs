//! The tools as the model sees them: OpenAI-style function definitions whose parameters are
//! exactly the argument types in `proto::tools` (brokerd refuses anything else anyway).

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
    ])
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
