//! Every socket brokerd has.

pub mod admin;
pub mod chat;
pub mod gateway;
pub mod jobs;
pub mod loopd;
pub mod witness;
