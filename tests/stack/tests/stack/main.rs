//! Stack tests: real binaries, real sockets, temporary directories.

mod activation;
mod agent;
mod agent_faults;
mod approvals;
mod binding;
mod broker;
mod cancel;
mod chat_approval;
mod dev;
mod dev_session;
mod docs;
mod durability;
mod fatal;
mod gateway;
mod gateway_approvals;
mod labels;
mod policy_history;
mod recovery;
mod refusal;
mod resolve;
mod shutdown;
mod status;
mod watchdog;
