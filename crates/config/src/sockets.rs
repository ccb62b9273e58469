//! `[sockets]`: the socket directories, one per pair of roles, and each socket's path.

use std::path::PathBuf;

use serde::Deserialize;

/// The socket directories, one per pair of roles; each holds its listener's socket.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sockets {
    /// Shared by loopd and brokerd: `broker.sock`, tool requests only.
    pub loop_broker: PathBuf,
    /// Shared by the owner's admin group (bxctl) and brokerd: `broker.sock`, approvals,
    /// admin and read-only queries.
    pub admin_broker: PathBuf,
    /// Shared by loopd and inferproxy: `infer.sock`, plain HTTP.
    #[serde(default = "default_loop_infer")]
    pub loop_infer: PathBuf,
    /// Shared by the owner's chat group (`bxctl chat`) and loopd: `loop.sock`.
    #[serde(default = "default_chat_loop")]
    pub chat_loop: PathBuf,
    /// Shared by the owner's chat group (`bxctl chat`), gatewayd and brokerd: `broker.sock`,
    /// the owner's messages registered before they reach loopd (`owner_message` only).
    #[serde(default = "default_chat_broker")]
    pub chat_broker: PathBuf,
    /// Shared by brokerd and gatewayd: `gateway.sock`, gatewayd listening, brokerd asking
    /// the owner for approvals through it.
    #[serde(default = "default_broker_gateway")]
    pub broker_gateway: PathBuf,
    /// Shared by the job runners and brokerd: `jobs.sock`, job registrations (and a run's note).
    #[serde(default = "default_jobs_broker")]
    pub jobs_broker: PathBuf,
    /// Shared by the job runners and loopd: `loop.sock`, a job run's one turn only.
    #[serde(default = "default_jobs_loop")]
    pub jobs_loop: PathBuf,
    /// Shared by the job runners and gatewayd: `gateway.sock`, a run's result only.
    #[serde(default = "default_jobs_gateway")]
    pub jobs_gateway: PathBuf,
    /// Shared by inferproxy and brokerd: `witness.sock`, brokerd listening, inferproxy
    /// reporting the completions it forwarded (witness reports only).
    #[serde(default = "default_infer_broker")]
    pub infer_broker: PathBuf,
}

/// inferproxy's socket file in `sockets.loop_infer`.
pub const INFER_SOCK: &str = "infer.sock";

/// Each socket's path, the one place its file name is written: the listener binds it, the
/// other role of the pair connects to it.
impl Sockets {
    /// brokerd's loopd side: tool requests only.
    pub fn loop_broker_sock(&self) -> PathBuf {
        self.loop_broker.join("broker.sock")
    }

    /// brokerd's admin side: approvals, answers, queries.
    pub fn admin_broker_sock(&self) -> PathBuf {
        self.admin_broker.join("broker.sock")
    }

    /// inferproxy's socket, for loopd.
    pub fn loop_infer_sock(&self) -> PathBuf {
        self.loop_infer.join(INFER_SOCK)
    }

    /// loopd's chat socket, for `bxctl chat` and gatewayd.
    pub fn chat_loop_sock(&self) -> PathBuf {
        self.chat_loop.join("loop.sock")
    }

    /// brokerd's chat side, for `bxctl chat` and gatewayd.
    pub fn chat_broker_sock(&self) -> PathBuf {
        self.chat_broker.join("broker.sock")
    }

    /// brokerd's jobs side, for the job runners.
    pub fn jobs_broker_sock(&self) -> PathBuf {
        self.jobs_broker.join("jobs.sock")
    }

    /// loopd's jobs side, for the job runners.
    pub fn jobs_loop_sock(&self) -> PathBuf {
        self.jobs_loop.join("loop.sock")
    }

    /// gatewayd's jobs side, for the job runners.
    pub fn jobs_gateway_sock(&self) -> PathBuf {
        self.jobs_gateway.join("gateway.sock")
    }

    /// brokerd's witness side, for inferproxy.
    pub fn infer_broker_sock(&self) -> PathBuf {
        self.infer_broker.join("witness.sock")
    }

    /// gatewayd's socket, for brokerd.
    pub fn broker_gateway_sock(&self) -> PathBuf {
        self.broker_gateway.join("gateway.sock")
    }
}

fn default_loop_infer() -> PathBuf {
    PathBuf::from("/run/boxmaker/loop-infer")
}

fn default_chat_loop() -> PathBuf {
    PathBuf::from("/run/boxmaker/chat-loop")
}

fn default_chat_broker() -> PathBuf {
    PathBuf::from("/run/boxmaker/chat-broker")
}

fn default_jobs_broker() -> PathBuf {
    PathBuf::from("/run/boxmaker/jobs-broker")
}

fn default_jobs_loop() -> PathBuf {
    PathBuf::from("/run/boxmaker/jobs-loop")
}

fn default_jobs_gateway() -> PathBuf {
    PathBuf::from("/run/boxmaker/jobs-gateway")
}

fn default_broker_gateway() -> PathBuf {
    PathBuf::from("/run/boxmaker/broker-gateway")
}

fn default_infer_broker() -> PathBuf {
    PathBuf::from("/run/boxmaker/infer-broker")
}
