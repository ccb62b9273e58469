//! Grants for MCP tools: `tool = "mcp:<server>/<tool>"` or `"mcp:<server>/*"`, limited by
//! `constraints.args` (a JSON pointer into the call's arguments and the patterns the value
//! there must match), and by `paths` and `hosts`, which say what the server's unit may
//! reach (bound read-only, resolved addresses) rather than match an argument.
//!
//! The arguments reach [`check`] already checked against the pinned schema and in
//! canonical form (brokerd), so the pointer reads exactly what the server receives.

use proto::Grant;
use proto::mcp::McpArgs;
use serde_json::Value;

use super::host::Entry;
use super::mcp_error::{ArgMismatch, McpGrantError};
use super::pattern::Pattern;

/// The prefix of every MCP grant's tool.
pub const PREFIX: &str = "mcp:";

/// `(server, tool)` of an MCP grant's tool name, `tool` being `*` for every tool of the
/// server; `None` for a name without the prefix; `Err` for a malformed one.
pub fn split(tool: &str) -> Option<Result<(&str, &str), McpGrantError>> {
    let rest = tool.strip_prefix(PREFIX)?;
    let bad = || McpGrantError::Name {
        tool: tool.to_owned(),
    };
    let Some((server, name)) = rest.split_once('/') else {
        return Some(Err(bad()));
    };
    let server_ok = (1..=24).contains(&server.len())
        && !server.starts_with('-')
        && server
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let name_ok = name == "*"
        || (!name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
    Some(if server_ok && name_ok {
        Ok((server, name))
    } else {
        Err(bad())
    })
}

/// Whether an MCP grant's tool names this call's tool.
pub fn names(grant_tool: &str, call: &McpArgs) -> bool {
    match split(grant_tool) {
        Some(Ok((server, tool))) => server == call.server && (tool == "*" || tool == call.tool),
        _ => false,
    }
}

/// Load-time checks of an MCP grant beyond the common ones: its name, its `args`, and
/// hosts that can be resolved to addresses.
pub(super) fn validate(grant: &Grant) -> Result<(), McpGrantError> {
    if let Some(Err(e)) = split(&grant.tool) {
        return Err(e);
    }
    for (pointer, patterns) in &grant.constraints.args {
        if !(pointer.is_empty() || pointer.starts_with('/')) || bad_escape(pointer) {
            return Err(McpGrantError::Pointer {
                pointer: pointer.clone(),
            });
        }
        if patterns.is_empty() {
            return Err(McpGrantError::NoPatterns {
                pointer: pointer.clone(),
            });
        }
        for (index, p) in patterns.iter().enumerate() {
            Pattern::parse(p).map_err(|e| McpGrantError::Pattern {
                pointer: pointer.clone(),
                index,
                detail: e.to_string(),
            })?;
        }
    }
    if let Some(entry) = grant
        .constraints
        .hosts
        .iter()
        .find(|h| matches!(Entry::parse(h), Ok(Entry::Below(_))))
    {
        return Err(McpGrantError::WildcardHost {
            entry: entry.clone(),
        });
    }
    Ok(())
}

/// A `~` not followed by `0` or `1`.
fn bad_escape(pointer: &str) -> bool {
    let bytes = pointer.as_bytes();
    bytes
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')))
}

/// Whether the grant's `args` cover the call's (canonical) arguments: every pointer leads
/// to a string, number or boolean whose text matches one of its patterns (a string as it
/// is, anything else as its JSON).
pub(super) fn check(grant: &Grant, call: &McpArgs) -> Result<(), ArgMismatch> {
    if grant.constraints.args.is_empty() {
        return Ok(());
    }
    // brokerd hands only arguments it parsed strictly; anything else has no value to match.
    let value: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    for (pointer, patterns) in &grant.constraints.args {
        let text = match value.pointer(pointer) {
            None => {
                return Err(ArgMismatch::Missing {
                    pointer: pointer.clone(),
                });
            }
            Some(Value::String(s)) => s.clone(),
            Some(v @ (Value::Number(_) | Value::Bool(_) | Value::Null)) => v.to_string(),
            Some(Value::Array(_) | Value::Object(_)) => {
                return Err(ArgMismatch::NotScalar {
                    pointer: pointer.clone(),
                });
            }
        };
        let matched = patterns
            .iter()
            .filter_map(|p| Pattern::parse(p).ok())
            .any(|p| p.matches(&text));
        if !matched {
            return Err(ArgMismatch::NoPattern {
                pointer: pointer.clone(),
                value: text,
                patterns: patterns.clone(),
            });
        }
    }
    Ok(())
}
