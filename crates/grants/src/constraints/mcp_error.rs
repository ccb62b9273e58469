//! Why an MCP grant is refused at load, and why it does not cover a call: the tool name
//! `mcp:<server>/<tool>` and `constraints.args` (`super::mcp`). The texts are for the owner
//! (`bxctl grants check`, brokerd's refusal to start) and, for [`ArgMismatch`], for the model
//! and the audit, which see it in a denial's detail.

use std::fmt;

/// Why an MCP grant cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpGrantError {
    /// `tool` is not `mcp:<server>/<tool>` or `mcp:<server>/*`.
    Name { tool: String },
    /// A pointer of `constraints.args` that is not a JSON pointer (RFC 6901).
    Pointer { pointer: String },
    /// A pointer with no pattern: it would match nothing.
    NoPatterns { pointer: String },
    /// A pattern of `constraints.args` that does not parse (the pattern's own words).
    Pattern {
        pointer: String,
        index: usize,
        detail: String,
    },
    /// A `hosts` entry `*.suffix`: an MCP unit reaches resolved addresses, never a suffix.
    WildcardHost { entry: String },
    /// `constraints.args` on a grant for one of boxmaker's own tools.
    ArgsNotMcp { tool: String },
}

impl fmt::Display for McpGrantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name { tool } => write!(
                f,
                "{tool:?} is no MCP tool: write mcp:<server>/<tool> or mcp:<server>/* (the \
                 server's name as configured in [[mcp]], the tool's as `bxctl mcp show` lists it)"
            ),
            Self::Pointer { pointer } => write!(
                f,
                "constraints.args: {pointer:?} is not a JSON pointer (\"\" or \"/name\", with \
                 ~0 for ~ and ~1 for /)"
            ),
            Self::NoPatterns { pointer } => write!(
                f,
                "constraints.args.{pointer:?} lists no pattern, so it would match nothing: list \
                 at least one (\"*\" for any value)"
            ),
            Self::Pattern {
                pointer,
                index,
                detail,
            } => write!(f, "constraints.args.{pointer:?}[{index}]: {detail}"),
            Self::WildcardHost { entry } => write!(
                f,
                "constraints.hosts: {entry:?} names every host below a suffix, but an MCP \
                 server's unit reaches only the addresses brokerd resolved for the names listed: \
                 list each host"
            ),
            Self::ArgsNotMcp { tool } => write!(
                f,
                "constraints.args applies to MCP tools only, not to {tool} (its patterns, paths \
                 or hosts limit it): remove it"
            ),
        }
    }
}

impl std::error::Error for McpGrantError {}

/// Why an MCP grant's `constraints.args` do not cover a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgMismatch {
    /// Nothing in the arguments at `pointer`.
    Missing { pointer: String },
    /// An object or an array at `pointer`: patterns match text, numbers and booleans.
    NotScalar { pointer: String },
    /// The value at `pointer` (as text) matches none of `patterns`.
    NoPattern {
        pointer: String,
        value: String,
        patterns: Vec<String>,
    },
}

impl fmt::Display for ArgMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { pointer } => {
                write!(f, "the arguments have nothing at {pointer:?}")
            }
            Self::NotScalar { pointer } => write!(
                f,
                "the arguments hold an object or an array at {pointer:?}, which no pattern \
                 matches"
            ),
            Self::NoPattern {
                pointer,
                value,
                patterns,
            } => {
                let list: Vec<String> = patterns.iter().map(|p| format!("{p:?}")).collect();
                write!(
                    f,
                    "{value:?} at {pointer:?} matches none of the patterns {}",
                    list.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for ArgMismatch {}
