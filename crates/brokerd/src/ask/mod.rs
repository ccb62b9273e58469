//! Asking the owner: what waits for an answer, the desk that asks and hears, the outbox.
//!
//! `approvals` holds each ask bound to its card, single use, expiring; `allowances` what the
//! owner allowed for a session; `approved` is the one proof that the owner approved, made
//! here only; `desk` puts an ask to the owner and takes the answers; `outbox` carries cards,
//! outcomes and the audit alert to gatewayd; `verify_slot` holds the one failed
//! verification's alert that waits to be posted.
//!
//! Which calls ask, and what their card binds, is the broker's (`broker/ask.rs`); how an ask
//! waits, expires and is answered is here. What a card shows beyond today's fields (the
//! diff a `write_file` or `edit_file` would make) is built here too; a new channel to the
//! owner is a socket (`sockets/`) that the outbox feeds.

pub mod allowances;
pub mod approvals;
pub mod approved;
pub mod desk;
pub mod outbox;
pub mod verify_slot;
