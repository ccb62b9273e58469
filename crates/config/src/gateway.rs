//! gatewayd's section, `[gateway]`: the owner's Mattermost. brokerd reads it too: `owners`
//! decides whose answers to an approval count.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::Invalid;
use super::duration::duration;

/// gatewayd chats with loopd on `sockets.chat_loop/loop.sock` and serves brokerd on
/// `sockets.broker_gateway/gateway.sock`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gateway {
    /// The Mattermost server's base URL, for example `https://chat.example.com`.
    pub server: String,
    /// The systemd credential (under `$CREDENTIALS_DIRECTORY`) holding the bot's token.
    #[serde(default = "default_token_credential")]
    pub token_credential: String,
    /// A file with the token instead of the credential: development and tests only.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The Mattermost user ids heard as the owner: only they chat, and only their answers
    /// to an approval count (brokerd checks, not gatewayd).
    pub owners: Vec<String>,
    /// The channel the bot listens, answers and asks for approvals in.
    pub channel: String,
    /// gatewayd's durable state (threads, posts handled, approval posts); `home/gateway`
    /// if unset.
    #[serde(default)]
    pub state: Option<PathBuf>,
    /// The shortest time between two edits of a streamed reply.
    #[serde(default = "default_edit_interval", deserialize_with = "duration")]
    pub edit_interval: Duration,
    /// How often the typing indicator is renewed while a turn runs (Mattermost shows it
    /// for a few seconds per call).
    #[serde(default = "default_typing_interval", deserialize_with = "duration")]
    pub typing_interval: Duration,
}

/// Whether `id` has the form of a Mattermost id: 26 ASCII letters and digits (Mattermost's
/// `model.IsValidId`; its `NewId` writes 26 lowercase base-32 characters).
pub fn is_user_id(id: &str) -> bool {
    id.len() == 26 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn default_typing_interval() -> Duration {
    Duration::from_secs(4)
}

fn default_token_credential() -> String {
    "mattermost-token".into()
}

fn default_edit_interval() -> Duration {
    Duration::from_millis(500)
}

impl Gateway {
    pub(super) fn validate(&self) -> Result<(), Invalid> {
        if !(self.server.starts_with("https://") || self.server.starts_with("http://")) {
            return Err(Invalid::GatewayServer {
                server: self.server.clone(),
            });
        }
        if self.owners.is_empty() || self.owners.iter().any(String::is_empty) {
            return Err(Invalid::GatewayOwners);
        }
        if let Some(id) = self.owners.iter().find(|id| !is_user_id(id)) {
            return Err(Invalid::GatewayOwnerId { id: id.clone() });
        }
        if self.channel.is_empty() || self.edit_interval.is_zero() || self.typing_interval.is_zero()
        {
            return Err(Invalid::GatewayEmpty);
        }
        if self.token_credential.is_empty() || self.token_credential.contains('/') {
            return Err(Invalid::GatewayTokenCredential {
                name: self.token_credential.clone(),
            });
        }
        Ok(())
    }

    /// gatewayd's durable state directory.
    pub fn state_dir(&self, home: &Path) -> PathBuf {
        self.state.clone().unwrap_or_else(|| home.join("gateway"))
    }
}
