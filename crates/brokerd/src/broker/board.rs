//! What `bxctl status` reports that happens between requests: the last grants reload and
//! the state of the link to gatewayd, kept as they happen.

use std::sync::{Mutex, PoisonError};

use proto::Timestamp;
use proto::status::{GatewayLink, Reloaded};

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

    /// Whether the link to gatewayd is up now.
    pub fn is_linked(&self) -> bool {
        matches!(
            *self.gateway.lock().unwrap_or_else(PoisonError::into_inner),
            Some(GatewayLink::Linked { .. })
        )
    }

    /// The link to gatewayd is up.
    pub fn linked(&self) {
        *self.gateway.lock().unwrap_or_else(PoisonError::into_inner) = Some(GatewayLink::Linked {
            since: Timestamp::now(),
            version: None,
        });
    }

    /// gatewayd stated its version on the link that is up.
    pub fn gateway_version(&self, stated: &str) {
        let mut link = self.gateway.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(GatewayLink::Linked { version, .. }) = &mut *link {
            // gatewayd's words: kept short; bxctl shows them inert.
            *version = Some(stated.chars().take(64).collect());
        }
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

impl Board {
    pub fn reloaded(&self, outcome: Reloaded) {
        *self
            .last_reload
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(outcome);
    }

    pub fn last_reload(&self) -> Option<Reloaded> {
        self.last_reload
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn gateway(&self) -> Option<GatewayLink> {
        self.gateway
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
