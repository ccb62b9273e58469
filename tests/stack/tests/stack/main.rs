//! Stack tests: real binaries, real sockets, temporary directories.

mod activation;
mod agent;
mod agent_faults;
mod approvals;
mod binding;
mod broker;
mod docs;
mod durability;
mod fatal;
mod gateway;
mod gateway_approvals;
mod labels;
mod policy_history;
mod prompt_cache;
mod real_session;
mod recovery;
mod refusal;
mod resolve;
mod shutdown;
mod watchdog;
