//! gatewayd's tests, one binary with a module per concern: the approval cards, what counts
//! as an answer, model text made inert, and the durable state. (The whole daemon against a
//! fake Mattermost is tested in tests/stack.)

mod card;
mod render;
mod state;
mod verdict;
