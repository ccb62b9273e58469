//! Running an allowed call.

pub mod bind;
mod resolve;
pub mod runner;
pub mod tool_spec;
