//! Asking the owner: the approvals waiting for an answer, the desk that puts an `ask` and
//! takes answers, and the outbox that carries cards, outcomes and alerts to gatewayd.

pub mod approvals;
pub mod desk;
pub mod outbox;
