//! What `bxctl status` asks of brokerd (`status_query`), and the reload `bxctl grants
//! reload` asks for (`grants_reload`), the one SIGHUP makes too. The last reload and the
//! state of the link to gatewayd are kept here as they happen, so the status costs a read
//! of the grants directory and nothing else.

use std::sync::{Mutex, PoisonError};

use daemon::log;
use proto::Timestamp;
use proto::status::{BrokerStatus, GatewayLink, GrantsStatus, OnDisk, Reloaded};

use crate::Fatal;
use crate::broker::Broker;
use grants::Snapshot;

/// What happened last, as it happened.
#[derive(Debug)]
pub struct Board {
    last_reload: Mutex<Option<Reloaded>>,
    gateway: Mutex<Option<GatewayLink>>,
}

impl Board {
    /// `gateway`: whether a link to gatewayd is configured (then it is down until linked).
    pub fn new(gateway: bool) -> Self {
        let down = GatewayLink::Down {
            since: Timestamp::now(),
            reason: "not linked yet".to_owned(),
        };
        Self {
            last_reload: Mutex::new(None),
            gateway: Mutex::new(gateway.then_some(down)),
        }
    }

    /// The link to gatewayd is up.
    pub fn linked(&self) {
        *self.gateway.lock().unwrap_or_else(PoisonError::into_inner) = Some(GatewayLink::Linked {
            since: Timestamp::now(),
        });
    }

    /// The link to gatewayd broke, or could not be made: `reason`. The time of the first
    /// failure of an outage is kept.
    pub fn down(&self, reason: String) {
        let mut link = self.gateway.lock().unwrap_or_else(PoisonError::into_inner);
        let since = match &*link {
            Some(GatewayLink::Down { since, .. }) => *since,
            _ => Timestamp::now(),
        };
        *link = Some(GatewayLink::Down { since, reason });
    }
}

/// Loads the grants directory again: the new snapshot is in force once audited, a bad one
/// is refused, audited with its reason, and the old one stays. A reload that cannot be
/// audited is [`Fatal`] (B10).
pub fn reload(broker: &Broker) -> Result<Reloaded, Fatal> {
    let time = Timestamp::now();
    let outcome = match Snapshot::load(&broker.config.grants) {
        Ok(snapshot) => {
            let (hash, grants) = (snapshot.hash(), snapshot.ids());
            let serving = serving(&snapshot);
            broker.install(snapshot)?;
            log::info(format_args!(
                "grants reloaded: snapshot {hash} ({} grants)",
                grants.len()
            ));
            daemon::notify::status(&serving);
            Reloaded::Loaded {
                time,
                snapshot: hash,
                grants,
            }
        }
        Err(e) => {
            log::error(format_args!(
                "grants not reloaded, keeping the old ones: {e}"
            ));
            let reason = e.to_string();
            broker.refuse_reload(&reason)?;
            Reloaded::Refused {
                time,
                kept: broker.snapshot().hash(),
                reason,
            }
        }
    };
    *broker
        .board
        .last_reload
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(outcome.clone());
    Ok(outcome)
}

/// brokerd as `bxctl status` shows it.
pub fn status(broker: &Broker) -> BrokerStatus {
    let loaded = broker.snapshot();
    let on_disk = match Snapshot::load(&broker.config.grants) {
        Ok(s) => OnDisk::Loads { snapshot: s.hash() },
        Err(e) => OnDisk::Refused {
            reason: e.to_string(),
        },
    };
    let head = broker.audit_head();
    let board = &broker.board;
    BrokerStatus {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pending_approvals: u32::try_from(broker.pending_cards().len()).unwrap_or(u32::MAX),
        audit_next_seq: head.next_seq,
        audit_head: head.prev,
        grants: GrantsStatus {
            loaded: loaded.hash(),
            grants: loaded.ids(),
            on_disk,
            last_reload: board
                .last_reload
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        },
        gateway: board
            .gateway
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone(),
    }
}

/// The status line (sd_notify STATUS=) while serving `snapshot`.
pub(crate) fn serving(snapshot: &Snapshot) -> String {
    format!(
        "serving; grants snapshot {} ({} grants)",
        snapshot.hash(),
        snapshot.ids().len()
    )
}
