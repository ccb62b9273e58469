//! A scripted stand-in MCP server for boxmaker's tests: the shapes of the reference servers
//! (checked against them by the real-peer tier), and what a hostile or broken server does:
//! a tool list that changes between runs, requests to sample, elicit or list roots, an
//! oversized or slow result, an `isError` result, a tool that reads
//! paths and sends them in the same call, a poisoned description, a line that is not
//! JSON, an exit mid-call, a server that ignores the end of its stdin or SIGTERM. Over
//! stdio, or behind Streamable HTTP on a loopback port (`--http`, [`http`]).

pub mod http;
mod script;
mod send;
#[cfg(test)]
mod send_tests;
mod serve;
#[cfg(test)]
mod serve_tests;

pub use script::{Block, Reply, RugPull, Script, ScriptError, ServerInfo, Step, Tool};
pub use serve::run;
