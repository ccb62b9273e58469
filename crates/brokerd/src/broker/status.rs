//! What `bxctl status` asks of brokerd (`status_query`), and the reload `bxctl grants
//! reload` asks for (`grants_reload`), the one SIGHUP makes too. The last reload and the
//! state of the link to gatewayd are kept on the broker's `Board` as they happen, so the
//! status costs a read of the grants directory and nothing else.

use daemon::log;
use proto::Timestamp;
use proto::status::{BrokerStatus, GrantsStatus, OnDisk, Reloaded};

use crate::Fatal;
use crate::broker::Broker;
use grants::Snapshot;

/// Loads the grants directory again: the new snapshot is in force once audited, a bad one
/// is refused, audited with its reason, and the old one stays. A reload that cannot be
/// audited is [`Fatal`] (B10).
pub fn reload(broker: &Broker) -> Result<Reloaded, Fatal> {
    let time = Timestamp::now();
    let outcome = match load(broker) {
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
            broker.refuse_reload(&e)?;
            Reloaded::Refused {
                time,
                kept: broker.snapshot().hash(),
                reason: e,
            }
        }
    };
    broker.board.reloaded(outcome.clone());
    Ok(outcome)
}

/// The grants directory as a reload would take it: it loads, and its job grants name jobs
/// the configuration has (`jobs::check`); the reason why not otherwise.
fn load(broker: &Broker) -> Result<Snapshot, String> {
    let snapshot = Snapshot::load(&broker.config.grants).map_err(|e| e.to_string())?;
    crate::jobs::check(&broker.config, &snapshot)
        .map_err(|e| format!("{}: {e}", broker.config.grants.display()))?;
    Ok(snapshot)
}

/// brokerd as `bxctl status` shows it.
pub fn status(broker: &Broker) -> BrokerStatus {
    let loaded = broker.snapshot();
    let on_disk = match load(broker) {
        Ok(s) => OnDisk::Loads { snapshot: s.hash() },
        Err(reason) => OnDisk::Refused { reason },
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
            last_reload: board.last_reload(),
        },
        gateway: board.gateway(),
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
