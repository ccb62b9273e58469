//! loopd: the agent loop. It keeps each session's log, builds every request to the model
//! from that log (replaying what the server returned exactly, so its prompt cache stays
//! warm), sends each tool call the model makes to brokerd, and streams the turn to the
//! owner's channel. It trusts nothing the model says about taint: brokerd keeps that.

mod answer;
mod broker;
mod cancel;
mod compact;
mod core_memory;
mod error;
mod jobs;
mod listing;
mod llm;
mod prompt;
mod server;
mod slots;
mod start;
mod status;
pub mod store;
mod tools;
mod turn;

pub use error::Error;
pub use start::{Args, run};
