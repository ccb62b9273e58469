//! Why an MCP grant is refused at load, and why it does not cover a call: the tool name
//! `mcp:<server>/<tool>` and `constraints.args` (`super::mcp`). The texts are for the owner
//! (`bxctl grants check`, brokerd's refusal to start) and, for [`ArgMismatch`], for the model
//! and the audit, which see it in a denial's detail.

/// Why an MCP grant cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpGrantError {
    /// `tool` is not `mcp:<server>/<tool>` or `mcp:<server>/*`.
    #[error(
        "{tool:?} is no MCP tool: write mcp:<server>/<tool> or mcp:<server>/* (the \
         server's name as configured in [[mcp]], the tool's as `bxctl mcp show` lists it)"
    )]
    Name { tool: String },
    /// A pointer of `constraints.args` that is not a JSON pointer (RFC 6901).
    #[error(
        "constraints.args: {pointer:?} is not a JSON pointer (\"\" or \"/name\", with \
         ~0 for ~ and ~1 for /)"
    )]
    Pointer { pointer: String },
    /// A pointer with no pattern: it would match nothing.
    #[error(
        "constraints.args.{pointer:?} lists no pattern, so it would match nothing: list \
         at least one (\"*\" for any value)"
    )]
    NoPatterns { pointer: String },
    /// A pattern of `constraints.args` that does not parse (the pattern's own words).
    #[error("constraints.args.{pointer:?}[{index}]: {detail}")]
    Pattern {
        pointer: String,
        index: usize,
        detail: String,
    },
    /// A `hosts` entry `*.suffix`: an MCP unit reaches resolved addresses, never a suffix.
    #[error(
        "constraints.hosts: {entry:?} names every host below a suffix, but an MCP \
         server's unit reaches only the addresses brokerd resolved for the names listed: \
         list each host"
    )]
    WildcardHost { entry: String },
    /// `constraints.args` on a grant for one of boxmaker's own tools.
    #[error(
        "constraints.args applies to MCP tools only, not to {tool} (its patterns, paths \
         or hosts limit it): remove it"
    )]
    ArgsNotMcp { tool: String },
}

/// Why an MCP grant's `constraints.args` do not cover a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgMismatch {
    /// Nothing in the arguments at `pointer`.
    #[error("the arguments have nothing at {pointer:?}")]
    Missing { pointer: String },
    /// An object or an array at `pointer`: patterns match text, numbers and booleans.
    #[error(
        "the arguments hold an object or an array at {pointer:?}, which no pattern \
         matches"
    )]
    NotScalar { pointer: String },
    /// The value at `pointer` (as text) matches none of `patterns`.
    #[error(
        "{value:?} at {pointer:?} matches none of the patterns {}",
        quoted(patterns)
    )]
    NoPattern {
        pointer: String,
        value: String,
        patterns: Vec<String>,
    },
}

/// The patterns, each quoted, separated by commas.
fn quoted(patterns: &[String]) -> String {
    let list: Vec<String> = patterns.iter().map(|p| format!("{p:?}")).collect();
    list.join(", ")
}
