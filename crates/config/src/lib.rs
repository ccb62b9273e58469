//! config: the schema of boxmaker's one configuration file, `/etc/boxmaker/config.toml`,
//! shared by every role and bxctl: each role reads its own section. One purpose: reading
//! and checking that file (its sections, the sockets' names, the peers, the jobs, which
//! directories something writes) and the paths it implies; it starts nothing and talks to
//! no one (that is the runtime's, `daemon`). Unknown fields are refused, so a typo is an
//! error at `--check-config` (and at the NixOS build, which runs it) rather than a silent
//! default.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

mod duration;
mod gateway;
mod hands;
mod infer;
mod invalid;
mod jobs;
mod mcp;
mod self_test;
mod sockets;
mod written;
use duration::duration;
pub use gateway::Gateway;
pub use hands::HandsInvalid;
pub use infer::{Infer, Upstream};
pub use invalid::Invalid;
pub use jobs::{Deliver, Job, JobInvalid, MAX_PROMPT, jobs_file};
pub use mcp::{McpInvalid, McpServer, mcp_file};
pub use self_test::{SelfTest, SelfTestInvalid};
pub use sockets::{INFER_SOCK, Sockets};

pub const DEFAULT_PATH: &str = "/etc/boxmaker/config.toml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The state directory: `sessions/` and `memory/` (loopd), `audit/` and `broker/`
    /// (brokerd), `gateway/` (gatewayd, unless `[gateway] state` names another).
    #[serde(default = "default_home")]
    pub home: PathBuf,
    /// The grants directory: one `<id>.toml` per grant.
    #[serde(default = "default_grants")]
    pub grants: PathBuf,
    pub sockets: Sockets,
    pub peers: Peers,
    #[serde(default)]
    pub broker: Broker,
    #[serde(default)]
    pub r#loop: Loop,
    #[serde(default)]
    pub infer: Infer,
    /// The Mattermost gateway (gatewayd); absent when the owner chats only through bxctl.
    #[serde(default)]
    pub gateway: Option<Gateway>,
    /// Scheduled jobs (docs/jobs.md), each `[[jobs]]`.
    #[serde(default)]
    pub jobs: Vec<Job>,
    /// MCP servers (docs/mcp.md), each `[[mcp]]`.
    #[serde(default)]
    pub mcp: Vec<McpServer>,
    /// The owner's core memory (docs/memory.md): `<home>/memory/core.md` unless set. loopd
    /// puts it in every prompt; brokerd accounts for it, so it must be a file loopd cannot
    /// write (the NixOS module sets `/etc/boxmaker/core.md`), and it is refused inside any
    /// directory a role or tool writes (`Config::written_dirs`).
    #[serde(default)]
    pub core_memory: Option<PathBuf>,
}

/// Who may connect on each side, checked with SO_PEERCRED on every connection (defence in
/// depth behind the directories' permissions).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Peers {
    pub loopd: Peer,
    pub admin: Peer,
    /// Who may chat on loop.sock (the owner). loopd refuses to start without it.
    #[serde(default)]
    pub chat: Option<Peer>,
    /// gatewayd: loopd admits it on loop.sock besides `chat`. (brokerd, its client on
    /// gateway.sock, cannot check it: a socket-activated listener's credentials are
    /// systemd's.)
    #[serde(default)]
    pub gateway: Option<Peer>,
    /// brokerd: gatewayd admits it on gateway.sock. gatewayd refuses to start without it.
    #[serde(default)]
    pub broker: Option<Peer>,
    /// inferproxy: brokerd admits it on witness.sock (its reports of the completions it
    /// forwarded). brokerd refuses to start without it.
    #[serde(default)]
    pub infer: Option<Peer>,
    /// Who else may run jobs, besides each job's own user `boxmaker-job-<name>` (always
    /// admitted on the jobs sockets): under `bxctl dev` the developer's uid, where the
    /// runner's claim names the job (SO_PEERCRED cannot tell jobs apart there).
    #[serde(default)]
    pub jobs: Option<Peer>,
}

/// A user name (resolved through NSS, which knows DynamicUser names), a group the peer's
/// user belongs to, or a numeric uid (development, where it is the developer's own).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Peer {
    User(String),
    Group(String),
    Uid(u32),
}

/// As a refusal names it: `user boxmaker-loopd`, `group boxmaker-admin`, `uid 1000`.
impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User(name) => write!(f, "user {name}"),
            Self::Group(name) => write!(f, "group {name}"),
            Self::Uid(uid) => write!(f, "uid {uid}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunnerKind {
    /// Each tool call in its own transient systemd service unit. The only production runner.
    Systemd,
    /// A plain child process without isolation: development and stack tests only.
    Direct,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Broker {
    pub runner: RunnerKind,
    /// The `boxmaker-tool` binary.
    pub tool: PathBuf,
    /// How long an approval waits for the owner. At most one hour.
    #[serde(deserialize_with = "duration")]
    pub approval_ttl: Duration,
    /// How long an owner's "allow for this session" lasts from the answer. At most one
    /// hour (docs/broker.md).
    #[serde(deserialize_with = "duration")]
    pub allowance_ttl: Duration,
    pub max_pending_approvals: usize,
    pub max_connections: usize,
    /// How long a peer may take to send one frame once it has started it.
    #[serde(deserialize_with = "duration")]
    pub frame_deadline: Duration,
    /// How long a connection may sit idle between requests.
    #[serde(deserialize_with = "duration")]
    pub idle_timeout: Duration,
    pub max_result_bytes: u64,
    #[serde(deserialize_with = "duration")]
    pub tool_time_limit: Duration,
    pub tool_memory_mib: u64,
    pub tool_tasks_max: u32,
    /// An empty directory: the tool unit's RootDirectory=.
    pub sandbox_root: PathBuf,
    /// Read-only binds every tool needs inside its empty root (`SRC` or `SRC:DST`).
    pub sandbox_binds: Vec<String>,
    /// The remote model `consult` talks to.
    pub consult: Option<Consult>,
    /// The notes directory brokerd owns; `home/memory/notes` when unset (the NixOS module
    /// sets brokerd's own StateDirectory, docs/memory.md).
    pub notes: Option<PathBuf>,
    /// How long a tool request waits for inferproxy's report of the completion it names.
    #[serde(deserialize_with = "duration")]
    pub witness_wait: Duration,
    /// How many witness records brokerd keeps; older ones are forgotten (their calls are
    /// then `not_witnessed`).
    pub max_witness_records: usize,
    /// The account the write units (and a `run` with a `workdir`) run as under systemd:
    /// whose files the agent may write (docs/decisions.md H1). Never root.
    pub hands_user: Option<String>,
    /// The programs `run` grants may name: name -> absolute path (docs/decisions.md H11).
    pub programs: std::collections::BTreeMap<String, PathBuf>,
    /// For a program of `programs`, a file listing the store paths of its closure (Nix's
    /// `closureInfo`'s `store-paths`, with the tool's): all of the store its unit sees.
    pub program_closures: std::collections::BTreeMap<String, PathBuf>,
    /// On a systemd older than 257 (no `PrivatePIDs=`), lets the write units run in the
    /// host's PID namespace; without it brokerd refuses to start with a write grant there.
    pub hands_shared_pids: bool,
    /// The major version of the systemd that runs the tool units (the unit core's
    /// `systemdVersion`): which properties a unit may have (`PrivatePIDs=` from 257).
    pub systemd_version: u32,
    /// The hostile self-test's shadow only (`bxctl verify --hostile`): every call's host
    /// taken to resolve to this loopback address, where its sink listens.
    pub self_test: Option<SelfTest>,
}

/// The agent loop (loopd).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Loop {
    /// Tool calls the model may make in one turn before the turn ends.
    pub max_tool_calls: u32,
    /// Compact (end the epoch with a summary) once the context is this full, in percent
    /// (10 to 80: the summary request continues the epoch, and needs the rest).
    pub compact_percent: u8,
    /// How long one request to the model may take, the whole stream included.
    #[serde(deserialize_with = "duration")]
    pub request_timeout: Duration,
    /// The most tokens one answer may generate (`max_tokens`).
    pub max_tokens: u32,
}

impl Default for Loop {
    fn default() -> Self {
        Self {
            max_tool_calls: 8,
            compact_percent: 75,
            request_timeout: Duration::from_secs(600),
            max_tokens: 2048,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consult {
    /// Base URL of an OpenAI-compatible API, for example `https://api.example.com/v1`.
    pub url: String,
    pub model: String,
}

impl Default for Broker {
    fn default() -> Self {
        Self {
            runner: RunnerKind::Systemd,
            tool: PathBuf::from("/run/current-system/sw/bin/boxmaker-tool"),
            approval_ttl: Duration::from_secs(600),
            allowance_ttl: MAX_ALLOWANCE_TTL,
            max_pending_approvals: 16,
            max_connections: 64,
            frame_deadline: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_result_bytes: 64 * 1024,
            tool_time_limit: Duration::from_secs(30),
            tool_memory_mib: 256,
            tool_tasks_max: 16,
            sandbox_root: PathBuf::from("/run/boxmaker/tool-root"),
            sandbox_binds: vec!["/nix/store".into()],
            consult: None,
            notes: None,
            witness_wait: Duration::from_secs(5),
            max_witness_records: 4096,
            hands_user: None,
            programs: std::collections::BTreeMap::new(),
            program_closures: std::collections::BTreeMap::new(),
            hands_shared_pids: false,
            systemd_version: 257,
            self_test: None,
        }
    }
}

fn default_home() -> PathBuf {
    PathBuf::from("/var/lib/boxmaker")
}

fn default_grants() -> PathBuf {
    PathBuf::from("/etc/boxmaker/grants")
}

/// Why the configuration cannot be used. Each text prints what it wraps, which `source()`
/// does not return (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {error}", path.display())]
    Parse {
        path: PathBuf,
        error: proto::TomlError,
    },
    #[error("{}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: Invalid },
}

/// The longest an approval may wait (brief decision 5).
pub const MAX_APPROVAL_TTL: Duration = Duration::from_secs(3600);

/// The longest an owner's "allow for this session" lasts (issue 28 point 4).
pub const MAX_ALLOWANCE_TTL: Duration = Duration::from_secs(3600);

impl Config {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_owned(),
            error,
        })?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let config: Self = proto::from_toml(text).map_err(|error| ConfigError::Parse {
            path: path.to_owned(),
            error,
        })?;
        config.validate().map_err(|reason| ConfigError::Invalid {
            path: path.to_owned(),
            reason,
        })?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), Invalid> {
        for (name, p) in [
            ("home", &self.home),
            ("grants", &self.grants),
            ("sockets.loop_broker", &self.sockets.loop_broker),
            ("sockets.admin_broker", &self.sockets.admin_broker),
            ("sockets.loop_infer", &self.sockets.loop_infer),
            ("sockets.chat_loop", &self.sockets.chat_loop),
            ("sockets.chat_broker", &self.sockets.chat_broker),
            ("sockets.broker_gateway", &self.sockets.broker_gateway),
            ("sockets.jobs_broker", &self.sockets.jobs_broker),
            ("sockets.jobs_loop", &self.sockets.jobs_loop),
            ("sockets.jobs_gateway", &self.sockets.jobs_gateway),
            ("sockets.infer_broker", &self.sockets.infer_broker),
            ("broker.tool", &self.broker.tool),
            ("broker.sandbox_root", &self.broker.sandbox_root),
        ]
        .into_iter()
        .chain(self.core_memory.as_ref().map(|p| ("core_memory", p)))
        {
            if !p.is_absolute() {
                return Err(Invalid::NotAbsolute {
                    name,
                    path: p.clone(),
                });
            }
        }
        if self.sockets.loop_broker == self.sockets.admin_broker {
            return Err(Invalid::SameBrokerDirectory {
                dir: self.sockets.loop_broker.clone(),
            });
        }
        let dirs = [
            &self.sockets.loop_broker,
            &self.sockets.admin_broker,
            &self.sockets.loop_infer,
            &self.sockets.chat_loop,
            &self.sockets.chat_broker,
            &self.sockets.broker_gateway,
            &self.sockets.jobs_broker,
            &self.sockets.jobs_loop,
            &self.sockets.jobs_gateway,
            &self.sockets.infer_broker,
        ];
        if let Some(i) = (1..dirs.len()).find(|&i| dirs[..i].contains(&dirs[i])) {
            return Err(Invalid::SharedSocketDirectory {
                dir: dirs[i].clone(),
            });
        }
        self.infer.validate()?;
        if let Some(g) = &self.gateway {
            g.validate()?;
        }
        let b = &self.broker;
        if b.approval_ttl.is_zero() || b.approval_ttl > MAX_APPROVAL_TTL {
            return Err(Invalid::ApprovalTtl {
                ttl: b.approval_ttl,
            });
        }
        // Whole seconds, as the card states it and the binding covers it.
        if b.allowance_ttl.as_secs() == 0
            || b.allowance_ttl > MAX_ALLOWANCE_TTL
            || b.allowance_ttl.subsec_nanos() != 0
        {
            return Err(Invalid::AllowanceTtl {
                ttl: b.allowance_ttl,
            });
        }
        for (name, zero) in [
            ("broker.max_pending_approvals", b.max_pending_approvals == 0),
            ("broker.max_connections", b.max_connections == 0),
            ("broker.frame_deadline", b.frame_deadline.is_zero()),
            ("broker.idle_timeout", b.idle_timeout.is_zero()),
            ("broker.max_result_bytes", b.max_result_bytes == 0),
            ("broker.tool_time_limit", b.tool_time_limit.is_zero()),
            ("broker.tool_memory_mib", b.tool_memory_mib == 0),
            ("broker.tool_tasks_max", b.tool_tasks_max == 0),
            ("broker.witness_wait", b.witness_wait.is_zero()),
            ("broker.max_witness_records", b.max_witness_records == 0),
        ] {
            if zero {
                return Err(Invalid::Zero { name });
            }
        }
        // A result travels in one frame; JSON escaping can grow text six-fold.
        let most = u64::try_from((proto::MAX_FRAME - 4096) / 6).unwrap_or(u64::MAX);
        if b.max_result_bytes > most {
            return Err(Invalid::ResultTooLarge {
                max_result_bytes: b.max_result_bytes,
                most,
            });
        }
        let l = &self.r#loop;
        if l.max_tool_calls == 0 || l.request_timeout.is_zero() || l.max_tokens == 0 {
            return Err(Invalid::LoopZero);
        }
        if !(10..=80).contains(&l.compact_percent) {
            return Err(Invalid::CompactPercent {
                percent: l.compact_percent,
            });
        }
        self_test::validate(b.self_test.as_ref(), b.runner).map_err(Invalid::SelfTest)?;
        hands::validate(b.hands_user.as_ref(), &b.programs, &b.program_closures)
            .map_err(Invalid::Hands)?;
        jobs::validate(&self.jobs, self.gateway.is_some(), b.approval_ttl).map_err(Invalid::Job)?;
        mcp::validate(&self.mcp).map_err(Invalid::Mcp)?;
        self.check_core_memory()
    }

    /// Who the jobs sockets admit: each job's own user, and `peers.jobs` when set.
    pub fn job_runners(&self) -> Vec<Peer> {
        self.jobs
            .iter()
            .map(|j| Peer::User(j.name.unit_user()))
            .chain(self.peers.jobs.clone())
            .collect()
    }

    pub fn audit_dir(&self) -> PathBuf {
        self.home.join("audit")
    }

    /// brokerd's own durable state (session taint and untrusted flags).
    pub fn broker_state_dir(&self) -> PathBuf {
        self.home.join("broker")
    }

    /// The pins brokerd writes for the owner (`bxctl mcp pin`), one `<server>.json` each.
    pub fn mcp_dir(&self) -> PathBuf {
        self.home.join("mcp")
    }

    /// brokerd's witness store: what inferproxy witnessed, and which calls were used.
    pub fn witness_dir(&self) -> PathBuf {
        self.home.join("witness")
    }

    /// The owner's core memory file (`memory/core.md` unless `core_memory` says otherwise).
    pub fn core_memory_path(&self) -> PathBuf {
        self.core_memory
            .clone()
            .unwrap_or_else(|| self.home.join("memory/core.md"))
    }

    /// loopd's session logs, one directory per session.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// The notes (`memory/notes` unless `broker.notes` says otherwise).
    pub fn notes_dir(&self) -> PathBuf {
        self.broker
            .notes
            .clone()
            .unwrap_or_else(|| self.home.join("memory/notes"))
    }

    /// brokerd's own record of the notes: each note's hash and label, and the per-call
    /// directories write units write into.
    pub fn note_state_dir(&self) -> PathBuf {
        self.home.join("note-state")
    }

    /// brokerd's accounting of what loopd may send the model (`records.jsonl`).
    pub fn accounting_dir(&self) -> PathBuf {
        self.home.join("accounting")
    }

    /// The indexer's: its published partitions, working copies and progress.
    pub fn index_dir(&self) -> PathBuf {
        self.home.join("index")
    }

    /// Each session's label as brokerd exports it for the indexer.
    pub fn session_labels_dir(&self) -> PathBuf {
        self.home.join("session-labels")
    }
}

#[cfg(test)]
mod tests;
