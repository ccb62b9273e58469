//! Stack tests: real binaries, real sockets, temporary directories.

mod activation;
mod agent;
mod approvals;
mod broker;
mod docs;
mod durability;
