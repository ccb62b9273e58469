//! Stack tests: real binaries, real sockets, temporary directories.

mod activation;
mod approvals;
mod broker;
mod docs;
mod durability;
