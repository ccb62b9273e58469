//! brokerd: boxmaker's single policy point. Every tool call the model asks for arrives
//! here; brokerd validates the arguments against the tool's types, decides from the
//! owner's grants and what the session has read, asks the owner when a grant says `ask`,
//! writes a hash-chained audit record for every decision, and runs the tool in its own
//! sandbox. It trusts nothing loopd says beyond the request itself.

pub mod accounting;
pub mod admin;
pub mod approvals;
pub mod attested;
pub mod audit;
mod audit_verify;
pub mod bind;
mod board;
pub mod broker;
mod chat_socket;
mod desk;
mod error;
mod fatal;
pub mod gateway;
mod grants_in_force;
pub mod jobs;
mod jobs_socket;
pub mod notes;
mod outbox;
pub mod policy;
mod resolve;
pub mod restore;
pub mod runner;
pub mod server;
pub mod sessions;
mod start;
pub mod status;
pub mod tool_spec;
pub mod witness;
mod witness_socket;

pub use error::{EXIT_FAILURE, EXIT_FATAL, Error};
pub use fatal::Fatal;
pub use start::{Args, run};
