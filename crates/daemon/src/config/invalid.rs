//! Why a configuration that parsed cannot be used: the setting and what it must be. The
//! text reaches the owner through `--check-config` (and the NixOS build that runs it) and a
//! role's refusal to start, after the file's path.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// What is wrong with one setting (or a pair that must differ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// A path setting that is relative: its name and value.
    NotAbsolute { name: &'static str, path: PathBuf },
    /// `sockets.loop_broker` and `sockets.admin_broker` are this one directory.
    SameBrokerDirectory { dir: PathBuf },
    /// Two `[sockets]` entries are this one directory.
    SharedSocketDirectory { dir: PathBuf },
    /// `broker.approval_ttl` is 0 or above [`super::MAX_APPROVAL_TTL`].
    ApprovalTtl { ttl: Duration },
    /// A count or duration, named, that must be more than 0.
    Zero { name: &'static str },
    /// `broker.max_result_bytes` is above `most`, what one frame can carry.
    ResultTooLarge { max_result_bytes: u64, most: u64 },
    /// `loop.max_tool_calls`, `loop.request_timeout` or `loop.max_tokens` is 0.
    LoopZero,
    /// `loop.compact_percent` is outside 10 to 80: the summary request continues the
    /// epoch's prompt, so the instruction and the summary (an eighth of the context) must
    /// fit in what is left at the threshold.
    CompactPercent { percent: u8 },
    /// `gateway.server` is not an http:// or https:// URL.
    GatewayServer { server: String },
    /// `gateway.owners` is empty or has an empty id.
    GatewayOwners,
    /// An entry of `gateway.owners` is not in the form of a Mattermost user id (26 ASCII
    /// letters and digits, Mattermost's `IsValidId`): a user name, say.
    GatewayOwnerId { id: String },
    /// `gateway.channel` is empty, or `gateway.edit_interval` or `gateway.typing_interval`
    /// is 0.
    GatewayEmpty,
    /// `gateway.token_credential` is empty or has a `/`.
    GatewayTokenCredential { name: String },
    /// A `[[jobs]]` entry (`super::jobs`).
    Job(super::JobInvalid),
    /// The hands' settings (`broker.hands_user`, `broker.programs`).
    Hands(super::HandsInvalid),
    /// `core_memory` (or its default) is inside `dir`, which a role or a tool writes
    /// (`what`): model text there could become the owner's system prompt.
    CoreMemoryWritten {
        core: PathBuf,
        dir: PathBuf,
        what: &'static str,
    },
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAbsolute { name, path } => {
                write!(f, "{name} must be an absolute path, not {}", path.display())
            }
            Self::SameBrokerDirectory { .. } => f.write_str(
                "sockets.loop_broker and sockets.admin_broker must be different directories: \
                 the socket a connection arrives on decides what it may ask",
            ),
            Self::SharedSocketDirectory { .. } => f.write_str(
                "each [sockets] entry must be a directory of its own: each pair of roles has its \
                 own socket directory",
            ),
            Self::ApprovalTtl { .. } => {
                f.write_str("broker.approval_ttl must be more than 0 and at most 1h")
            }
            Self::Zero { name } => write!(f, "{name} must be more than 0"),
            Self::ResultTooLarge { most, .. } => write!(
                f,
                "broker.max_result_bytes must be at most {most} (one frame)"
            ),
            Self::LoopZero => f.write_str(
                "loop.max_tool_calls, loop.request_timeout and loop.max_tokens must be more than 0",
            ),
            Self::CompactPercent { .. } => f.write_str(
                "loop.compact_percent must be between 10 and 80 (the summary is written \
                     in what is left of the context)",
            ),
            Self::GatewayServer { .. } => {
                f.write_str("gateway.server must be an http:// or https:// URL")
            }
            Self::GatewayOwners => {
                f.write_str("gateway.owners must name at least one Mattermost user id")
            }
            Self::GatewayOwnerId { id } => write!(
                f,
                "gateway.owners: {id:?} is not a Mattermost user id (26 letters and digits, \
                 not a user name): the System Console's user list shows it, or \
                 `GET /api/v4/users/username/NAME` answers it as `id`"
            ),
            Self::GatewayEmpty => f.write_str(
                "gateway.channel, gateway.edit_interval and gateway.typing_interval must not be \
                 empty",
            ),
            Self::GatewayTokenCredential { .. } => {
                f.write_str("gateway.token_credential must be a plain credential name")
            }
            Self::Job(e) => e.fmt(f),
            Self::Hands(e) => e.fmt(f),
            Self::CoreMemoryWritten { core, dir, what } => write!(
                f,
                "core_memory {} is inside {} ({what}), which a role or a tool writes: text the \
                 model wrote could become the owner's system prompt; keep core memory where no \
                 role writes (the NixOS module uses /etc/boxmaker/core.md)",
                core.display(),
                dir.display()
            ),
        }
    }
}

impl std::error::Error for Invalid {}
