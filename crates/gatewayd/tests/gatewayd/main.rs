//! gatewayd's tests, one binary with a module per concern: the approval cards, what counts
//! as an answer, model text made inert, the durable state, and why it does not start and its
//! exit status. (The whole daemon against a fake Mattermost is tested in tests/stack.)

mod card;
mod exit;
mod render;
mod state;
mod verdict;
