//! What `bxctl status` asks of brokerd (`status_query`), and the reload `bxctl grants
//! reload` asks for (`grants_reload`), the one SIGHUP makes too. The last reload and the
//! state of the link to gatewayd are kept on the broker's `Board` as they happen, so the
//! status costs a read of the grants directory and nothing else.

use daemon::log;
use grants::Snapshot;
use proto::Timestamp;
use proto::status::{BrokerStatus, GrantsStatus, OnDisk, Reloaded};

use super::Broker;
use crate::Fatal;

impl Broker {
    /// Loads the grants directory again: the new snapshot is in force once audited, a bad one
    /// is refused, audited with its reason, and the old one stays. A reload that cannot be
    /// audited is [`Fatal`] (B10).
    pub fn reload(&self) -> Result<Reloaded, Fatal> {
        let time = Timestamp::now();
        // The MCP servers' pins too (a pin file the owner put in place by hand, or the
        // module's); pins that do not read leave those in force.
        if let Err(e) = self.pins.reload() {
            log::error(format_args!(
                "MCP pins not reloaded, keeping the old ones: {e}"
            ));
        }
        let outcome = match self.load() {
            Ok(snapshot) => {
                let (hash, grants) = (snapshot.hash(), snapshot.ids());
                let serving = serving(&snapshot);
                self.install(snapshot)?;
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
                self.refuse_reload(&e)?;
                Reloaded::Refused {
                    time,
                    kept: self.snapshot().hash(),
                    reason: e,
                }
            }
        };
        self.board.reloaded(outcome.clone());
        Ok(outcome)
    }

    /// brokerd as `bxctl status` shows it.
    pub fn status(&self) -> BrokerStatus {
        let loaded = self.snapshot();
        let on_disk = match self.load() {
            Ok(s) => OnDisk::Loads { snapshot: s.hash() },
            Err(reason) => OnDisk::Refused { reason },
        };
        let head = self.audit_head();
        let board = &self.board;
        BrokerStatus {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            pending_approvals: u32::try_from(self.pending_cards().len()).unwrap_or(u32::MAX),
            audit_next_seq: head.next_seq,
            audit_head: head.prev,
            grants: GrantsStatus {
                loaded: loaded.hash(),
                grants: loaded.ids(),
                on_disk,
                last_reload: board.last_reload(),
            },
            gateway: board.gateway(),
            allowances: self.allowances(),
        }
    }

    /// The grants directory as a reload would take it: it loads, and its job grants name jobs
    /// the configuration has (`jobs::check`); the reason why not otherwise.
    fn load(&self) -> Result<Snapshot, String> {
        let snapshot = Snapshot::load(&self.config.grants).map_err(|e| e.to_string())?;
        crate::jobs::check(&self.config, &snapshot)
            .map_err(|e| format!("{}: {e}", self.config.grants.display()))?;
        self.programs
            .check(&self.config, &snapshot)
            .map_err(|e| format!("{}: {e}", self.config.grants.display()))?;
        Ok(snapshot)
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
