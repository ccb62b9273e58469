//! The fixed ChatML-like template behind the prompt-cache simulation (the tokens are
//! `tokens.rs`'s).
//!
//! A conversation renders as:
//!
//! ```text
//! <|im_start|>system\n{system text}\n\n# Tools\n<tools>\n{tool}\n...</tools><|im_end|>\n   (tools given)
//! <|im_start|>system\n{system text}<|im_end|>\n                                           (no tools)
//! <|im_start|>user\n{text}<|im_end|>\n
//! <|im_start|>assistant\n{body}<|im_end|>\n
//! <|im_start|>tool\n{result}<|im_end|>\n
//! <|im_start|>assistant\n                                   (the generation prompt, always last)
//! ```
//!
//! where an assistant `{body}` is `<think>\n{reasoning}\n</think>\n` (only when it has
//! reasoning), then its content, then each tool call as
//! `<tool_call>\n{"name": "{name}", "arguments": {arguments}}\n</tool_call>` (a newline
//! before each call unless the body is still empty). A system message that is not first
//! renders like any other turn. Each tool renders as compact JSON with sorted keys. The
//! arguments are the request's string, verbatim: a client that re-serialises them is caught.
//!
//! The reply the fake generates renders with the same body function, so a slot's cached text
//! after a request is `prompt + body`, exactly what the next request renders when the client
//! replays the reply unchanged.

use serde_json::Value;

/// One tool call as the template sees it: the id is not rendered (real templates drop it too).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    /// Function name.
    pub name: String,
    /// Arguments JSON text, verbatim.
    pub arguments: String,
}

/// One message as the template sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Msg {
    /// `system`, `user`, `assistant`, `tool` (anything else renders with its own name).
    pub role: String,
    /// Text content (typed text parts joined).
    pub content: String,
    /// `reasoning_content` of an assistant message (empty when absent).
    pub reasoning: String,
    /// Tool calls of an assistant message.
    pub tool_calls: Vec<Call>,
}

const START: &str = "<|im_start|>";
const END: &str = "<|im_end|>\n";
/// The generation prompt that ends every rendered prompt.
pub const GENERATION_PROMPT: &str = "<|im_start|>assistant\n";

/// Renders the prompt for `messages` and `tools`, ending with the generation prompt.
pub fn render_prompt(messages: &[Msg], tools: &[Value]) -> String {
    let mut out = String::new();
    let mut rest = messages;
    if !tools.is_empty() {
        let system = match messages.first() {
            Some(first) if first.role == "system" => {
                rest = &messages[1..];
                first.content.as_str()
            }
            _ => "",
        };
        out.push_str(START);
        out.push_str("system\n");
        out.push_str(system);
        out.push_str("\n\n# Tools\n<tools>\n");
        for tool in tools {
            out.push_str(&canonical_json(tool));
            out.push('\n');
        }
        out.push_str("</tools>");
        out.push_str(END);
    }
    for msg in rest {
        out.push_str(START);
        out.push_str(&msg.role);
        out.push('\n');
        if msg.role == "assistant" {
            out.push_str(&render_body(msg));
        } else {
            out.push_str(&msg.content);
        }
        out.push_str(END);
    }
    out.push_str(GENERATION_PROMPT);
    out
}

/// Renders an assistant turn's body: reasoning, content, tool calls.
pub fn render_body(msg: &Msg) -> String {
    let mut out = String::new();
    if !msg.reasoning.is_empty() {
        out.push_str("<think>\n");
        out.push_str(&msg.reasoning);
        out.push_str("\n</think>\n");
    }
    out.push_str(&msg.content);
    for call in &msg.tool_calls {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("<tool_call>\n{\"name\": ");
        out.push_str(&Value::String(call.name.clone()).to_string());
        out.push_str(", \"arguments\": ");
        out.push_str(&call.arguments);
        out.push_str("}\n</tool_call>");
    }
    out
}

/// JSON with object keys sorted and no whitespace, whatever order the map keeps.
fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// Splits `text` into stream pieces of at most `chars` characters (none for an empty text).
pub fn split_chars(text: &str, chars: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for (i, c) in text.chars().enumerate() {
        if i > 0 && i % chars.max(1) == 0 {
            pieces.push(std::mem::take(&mut piece));
        }
        piece.push(c);
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}
