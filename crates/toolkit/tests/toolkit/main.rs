//! The real `boxmaker-tool` binary, one invocation on stdin per test case, against files in
//! temporary directories and tiny HTTP servers on 127.0.0.1 (no other network traffic).
//!
//! toolkit's tests, one module per concern: what the tool makes of its input, each tool, and
//! what every case shares.

mod consult;
mod errors;
mod exit_status;
mod fetch;
mod files;
mod input;
mod mcp;
mod notes;
mod stages;
mod support;
