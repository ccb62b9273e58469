//! brokerd: boxmaker's single policy point. Every tool call the model asks for arrives
//! here; brokerd validates the arguments against the tool's types, decides from the
//! owner's grants and what the session has read, asks the owner when a grant says `ask`,
//! writes a hash-chained audit record for every decision, and runs the tool in its own
//! sandbox. It trusts nothing loopd says beyond the request itself.

pub mod ask;
pub mod audit;
pub mod broker;
pub mod context;
mod error;
mod fatal;
pub mod jobs;
pub mod notes;
pub mod pins;
pub mod policy;
pub mod run;
pub mod sessions;
pub mod sockets;
pub mod start;

pub use error::{EXIT_FAILURE, EXIT_FATAL, Error};
pub use fatal::Fatal;
pub use start::{Args, run};
