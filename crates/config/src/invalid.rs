//! Why a configuration that parsed cannot be used: the setting and what it must be. The
//! text reaches the owner through `--check-config` (and the NixOS build that runs it) and a
//! role's refusal to start, after the file's path.

use std::path::PathBuf;
use std::time::Duration;

/// What is wrong with one setting (or a pair that must differ).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// A path setting that is relative: its name and value.
    #[error("{name} must be an absolute path, not {}", path.display())]
    NotAbsolute { name: &'static str, path: PathBuf },
    /// `sockets.loop_broker` and `sockets.admin_broker` are this one directory.
    #[error(
        "sockets.loop_broker and sockets.admin_broker must be different directories: \
         the socket a connection arrives on decides what it may ask"
    )]
    SameBrokerDirectory { dir: PathBuf },
    /// Two `[sockets]` entries are this one directory.
    #[error(
        "each [sockets] entry must be a directory of its own: each pair of roles has its \
         own socket directory"
    )]
    SharedSocketDirectory { dir: PathBuf },
    /// `broker.approval_ttl` is 0 or above [`super::MAX_APPROVAL_TTL`].
    #[error("broker.approval_ttl must be more than 0 and at most 1h")]
    ApprovalTtl { ttl: Duration },
    /// `broker.allowance_ttl` is under a second, not whole seconds, or above
    /// [`super::MAX_ALLOWANCE_TTL`].
    #[error("broker.allowance_ttl must be whole seconds, at least 1s and at most 1h")]
    AllowanceTtl { ttl: Duration },
    /// A count or duration, named, that must be more than 0.
    #[error("{name} must be more than 0")]
    Zero { name: &'static str },
    /// `broker.max_result_bytes` is above `most`, what one frame can carry.
    #[error("broker.max_result_bytes must be at most {most} (one frame)")]
    ResultTooLarge { max_result_bytes: u64, most: u64 },
    /// `loop.max_tool_calls`, `loop.request_timeout` or `loop.max_tokens` is 0.
    #[error("loop.max_tool_calls, loop.request_timeout and loop.max_tokens must be more than 0")]
    LoopZero,
    /// `loop.compact_percent` is outside 10 to 80: the summary request continues the
    /// epoch's prompt, so the instruction and the summary (an eighth of the context) must
    /// fit in what is left at the threshold.
    #[error(
        "loop.compact_percent must be between 10 and 80 (the summary is written \
         in what is left of the context)"
    )]
    CompactPercent { percent: u8 },
    /// `gateway.server` is not an http:// or https:// URL.
    #[error("gateway.server must be an http:// or https:// URL")]
    GatewayServer { server: String },
    /// `gateway.owners` is empty or has an empty id.
    #[error("gateway.owners must name at least one Mattermost user id")]
    GatewayOwners,
    /// An entry of `gateway.owners` is not in the form of a Mattermost user id (26 ASCII
    /// letters and digits, Mattermost's `IsValidId`): a user name, say.
    #[error(
        "gateway.owners: {id:?} is not a Mattermost user id (26 letters and digits, \
         not a user name): the System Console's user list shows it, or \
         `GET /api/v4/users/username/NAME` answers it as `id`"
    )]
    GatewayOwnerId { id: String },
    /// `gateway.channel` is empty, or `gateway.edit_interval` or `gateway.typing_interval`
    /// is 0.
    #[error(
        "gateway.channel, gateway.edit_interval and gateway.typing_interval must not be \
         empty"
    )]
    GatewayEmpty,
    /// `gateway.token_credential` is empty or has a `/`.
    #[error("gateway.token_credential must be a plain credential name")]
    GatewayTokenCredential { name: String },
    /// A `[[jobs]]` entry (`super::jobs`).
    #[error("{0}")]
    Job(super::JobInvalid),
    /// An `[[mcp]]` entry (`super::mcp`).
    #[error("{0}")]
    Mcp(super::McpInvalid),
    /// The hands' settings (`broker.hands_user`, `broker.programs`).
    #[error("{0}")]
    Hands(super::HandsInvalid),
    /// `[broker.self_test]` outside the self-test's shadow, or naming no loopback address.
    #[error("{0}")]
    SelfTest(super::SelfTestInvalid),
    /// `core_memory` (or its default) is inside `dir`, which a role or a tool writes
    /// (`what`): model text there could become the owner's system prompt.
    #[error(
        "core_memory {} is inside {} ({what}), which a role or a tool writes: text the \
         model wrote could become the owner's system prompt; keep core memory where no \
         role writes (the NixOS module uses /etc/boxmaker/core.md)",
        core.display(),
        dir.display()
    )]
    CoreMemoryWritten {
        core: PathBuf,
        dir: PathBuf,
        what: &'static str,
    },
}
