//! A `tools/call` result as boxmaker passes it on: the text content, in order; every other
//! block (image, audio, an embedded resource, a resource link, a type this client does not
//! know) described in one line that this crate writes, never its bytes. A URI or a MIME type
//! is named in a description only when it is short, visible ASCII; the server's other fields
//! (names, titles, annotations) are left out.

use serde_json::{Map, Value};

use crate::error::McpError;
use crate::json::canonical;

/// What one call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// The text blocks and the descriptions of the others, one after the other, joined by a
    /// newline. With no blocks at all, the structured content's canonical JSON, if any.
    pub text: String,
    /// The server's `isError`: the tool ran and failed.
    pub is_error: bool,
    /// How many blocks were described rather than passed on.
    pub described: usize,
}

/// The longest URI a description names.
const MAX_URI: usize = 256;
/// The longest MIME type a description names.
const MAX_MIME: usize = 100;

/// Reads a `tools/call` result.
pub fn call_result(result: &Map<String, Value>) -> Result<CallResult, McpError> {
    let is_error = match result.get("isError") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(McpError::protocol("tools/call: isError is not a boolean")),
    };
    let blocks = match result.get("content") {
        Some(Value::Array(blocks)) => blocks.as_slice(),
        Some(_) => return Err(McpError::protocol("tools/call: content is not an array")),
        None => &[],
    };
    let mut parts = Vec::with_capacity(blocks.len());
    let mut described = 0;
    for block in blocks {
        let Value::Object(block) = block else {
            return Err(McpError::protocol(
                "tools/call: a content block is not an object",
            ));
        };
        match block_text(block)? {
            Part::Text(t) => parts.push(t),
            Part::Described(d) => {
                described += 1;
                parts.push(d);
            }
        }
    }
    let text = match (parts.is_empty(), result.get("structuredContent")) {
        (true, Some(structured)) => canonical(structured),
        _ => parts.join("\n"),
    };
    Ok(CallResult {
        text,
        is_error,
        described,
    })
}

enum Part {
    Text(String),
    Described(String),
}

fn block_text(block: &Map<String, Value>) -> Result<Part, McpError> {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::protocol("tools/call: a content block without a type"))?;
    let string = |name: &str| block.get(name).and_then(Value::as_str);
    Ok(match kind {
        "text" => Part::Text(
            string("text")
                .ok_or_else(|| McpError::protocol("tools/call: a text block without text"))?
                .to_owned(),
        ),
        "image" | "audio" => {
            let size = string("data").map(base64_size);
            Part::Described(format!(
                "[{kind} content{}{}: not shown]",
                mime(string("mimeType")),
                size.map(|n| format!(", {n} bytes")).unwrap_or_default()
            ))
        }
        "resource" => {
            let resource = block.get("resource").and_then(Value::as_object);
            let field = |name: &str| resource.and_then(|r| r.get(name)).and_then(Value::as_str);
            let size = match (field("text"), field("blob")) {
                (Some(t), _) => format!(", {} bytes of text", t.len()),
                (None, Some(b)) => format!(", {} bytes", base64_size(b)),
                (None, None) => String::new(),
            };
            Part::Described(format!(
                "[embedded resource {}{}{size}: not shown]",
                uri(field("uri")),
                mime(field("mimeType"))
            ))
        }
        "resource_link" => Part::Described(format!(
            "[resource link {}{}: not followed]",
            uri(string("uri")),
            mime(string("mimeType"))
        )),
        other => Part::Described(format!(
            "[content of type {}: not shown]",
            visible(other, 40).unwrap_or("(not shown)")
        )),
    })
}

/// `text` when it is at most `max` bytes of visible ASCII without spaces.
fn visible(text: &str, max: usize) -> Option<&str> {
    (text.len() <= max && !text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic()))
        .then_some(text)
}

fn uri(text: Option<&str>) -> String {
    match text.and_then(|t| visible(t, MAX_URI)) {
        Some(u) => format!("<{u}>"),
        None => "(its URI not shown)".into(),
    }
}

fn mime(text: Option<&str>) -> String {
    let ok = |t: &&str| {
        t.split_once('/').is_some_and(|(a, b)| {
            [a, b].iter().all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&c))
            })
        })
    };
    match text.and_then(|t| visible(t, MAX_MIME)).filter(ok) {
        Some(m) => format!(", {m}"),
        None => String::new(),
    }
}

/// How many bytes base64 `data` decodes to (from its length; the data is not decoded).
fn base64_size(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count().min(2);
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding)
}
