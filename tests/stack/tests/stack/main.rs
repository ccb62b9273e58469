//! Stack tests: real binaries, real sockets, temporary directories.

mod activation;
mod agent;
mod agent_faults;
mod approvals;
mod broker;
mod docs;
mod durability;
mod gateway;
mod gateway_approvals;
mod refusal;
mod watchdog;
