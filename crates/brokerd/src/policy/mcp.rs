//! An MCP tool's call before any grant: the offered name (`mcp__<server>__<tool>`) must be a
//! pinned tool, and the arguments one JSON object, parsed strictly (a duplicate key refuses
//! it), checked against the pinned input schema and made canonical (`mcp::args`). What
//! fails is denied (`unknown_tool`, `invalid_arguments`) before any unit starts; what passes
//! is a `ToolArgs::Mcp`, decided by the grants like any call (`constraints.args` on its
//! canonical arguments, `grants::constraints::mcp`).

use proto::mcp::McpArgs;
use proto::tools::{ArgsError, ToolArgs};

use crate::pins::PinSet;

/// The call of `tool` with `arguments`, when `tool` is an MCP name; `None` otherwise.
pub fn parse(pins: &PinSet, tool: &str, arguments: &str) -> Option<Result<ToolArgs, ArgsError>> {
    if !tool.starts_with(mcp::names::PREFIX) {
        return None;
    }
    let Some((server, pinned, _)) = pins.lookup(tool) else {
        return Some(Err(ArgsError::UnknownTool(tool.to_owned())));
    };
    Some(
        mcp::args::parse(arguments, &pinned.schema)
            .map(|a| {
                ToolArgs::Mcp(McpArgs {
                    arguments: a.canonical,
                    server: server.to_owned(),
                    tool: pinned.name.clone(),
                })
            })
            .map_err(|e| ArgsError::Invalid {
                tool: tool.to_owned(),
                detail: e.to_string(),
            }),
    )
}
