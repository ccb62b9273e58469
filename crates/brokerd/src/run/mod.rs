//! An allowed call's run in a unit of its own: its spec, its bind, its addresses, its runner.
//!
//! `tool_spec` makes what the unit gets from the decision, `bind` the one path it binds,
//! `resolve` the addresses it may reach, `runner` starts it (a transient systemd unit, or a
//! plain child for development) and reads its answer. The hands' units are `hands`' (a
//! write's look and commit, a `run`'s program), and `programs` holds what they need from the
//! configuration and the rules a snapshot must keep for them.
//!
//! A new tool's run goes here: an MCP server started in its own unit and spoken to over its
//! stdio, say. Whether the call may run is `policy`'s; the labels its result takes come from
//! what its unit had bound (`broker/run.rs`).

pub mod bind;
pub mod hands;
pub mod mcp;
pub mod programs;
mod resolve;
pub mod runner;
mod self_test;
pub mod tool_spec;
