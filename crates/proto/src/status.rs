//! `bxctl status` and `bxctl grants reload`: what each role the owner's sockets reach says
//! of itself and of the peers only it reaches, so that bxctl never enters another pair's
//! directory. `status_query` on the admin side of broker.sock is answered with
//! `broker_status` (brokerd, its audit head, its grants, its link to gatewayd); on loop.sock
//! with `loop_status` (loopd, inferproxy and the model's `/health`). `grants_reload`, admin
//! side only, makes brokerd load the grants directory again (as SIGHUP does) and is answered
//! with `grants_reloaded`.

use serde::{Deserialize, Serialize};

use crate::allowance::Allowance;
use crate::{Hash32, Timestamp};

/// The response header in which inferproxy states its version on every answer it gives
/// (loopd reads it off the `/health` it asks for `status_query`); llama-server's own field
/// of that name is never passed on.
pub const INFERPROXY_VERSION_HEADER: &str = "X-Boxmaker-Inferproxy-Version";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerStatus {
    /// brokerd's version (its package version).
    pub version: String,
    pub pending_approvals: u32,
    /// The audit chain's head: the seq the next line takes and the hash it links to.
    pub audit_next_seq: u64,
    pub audit_head: Hash32,
    pub grants: GrantsStatus,
    /// The link to gatewayd; absent when no `[gateway]` is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayLink>,
    /// The session allowances in force, soonest expiring first (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowances: Vec<Allowance>,
}

/// The grants in force against the grants on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsStatus {
    /// The snapshot brokerd has loaded and decides by.
    pub loaded: Hash32,
    pub grants: Vec<String>,
    /// What the grants directory holds now: its snapshot hash, or why it does not load.
    pub on_disk: OnDisk,
    /// The last reload (SIGHUP or `grants_reload`) since brokerd started, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reload: Option<Reloaded>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum OnDisk {
    /// The directory loads, to this snapshot (equal to `loaded` when nothing changed).
    Loads { snapshot: Hash32 },
    /// The directory does not load: the file, place and reason, as `bxctl grants check`
    /// says it.
    Refused { reason: String },
}

/// What one reload came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reloaded {
    /// The new snapshot is in force.
    Loaded {
        time: Timestamp,
        snapshot: Hash32,
        grants: Vec<String>,
    },
    /// The directory did not load; the snapshot `kept` stays in force.
    Refused {
        time: Timestamp,
        kept: Hash32,
        reason: String,
    },
}

/// brokerd's connection to gatewayd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum GatewayLink {
    /// Connected since `since`; `version` is gatewayd's, as it states it in its first
    /// answer on the link (absent until then).
    Linked {
        since: Timestamp,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
    },
    /// Not connected (yet, or any more): why, and since when.
    Down { since: Timestamp, reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopStatus {
    /// loopd's version.
    pub version: String,
    /// Whether loopd reaches inferproxy on infer.sock.
    pub inferproxy: Reach,
    /// The model's `GET /health` through inferproxy.
    pub model: ModelHealth,
    /// The model the server runs, as its `GET /props` names it (`model_path`), when it
    /// answered: the server's words (the fake's demo names itself a demo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reach {
    /// `version` is inferproxy's, from its answer's [`INFERPROXY_VERSION_HEADER`].
    Reachable {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
    },
    Unreachable {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelHealth {
    /// `/health` answered 200.
    Ok,
    /// `/health` answered 503: the model is loading.
    Loading,
    /// Any other answer, or none: what it was.
    Unhealthy { reason: String },
}
