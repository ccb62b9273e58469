//! `bxctl dev --mattermost`: Mattermost tried locally before deploying. The fake Mattermost
//! (`crates/fake-mattermost`, the server the stack and container tests use) and gatewayd join
//! the stack; the chat then speaks through Mattermost as the owner does (`crate::mmview`):
//! what you type is posted in Town Square as the owner, the bot answers in its thread by
//! edits, and approvals come as root posts you answer with a reaction. The fake is told its
//! users and channel here, so that gatewayd's configuration and the fake agree.

use std::path::Path;
use std::process::Command;

use super::layout::Gateway;
use super::lock::StateLock;
use super::paths::bin;
use super::stack::Stack;
use crate::error::DevError;

/// The bot gatewayd runs as, and its token (in `STATE/mattermost-token`).
pub const BOT_ID: &str = "botkm8ecqs6ua9xrndy7w1ft5h";
const BOT_TOKEN: &str = "bot-token";
/// The owner, as whom the chat posts and reacts.
pub const OWNER_NAME: &str = "owner";
pub const OWNER_ID: &str = "ownerkp1dx4oy7wqbsm3e9t6ua";
pub const OWNER_TOKEN: &str = "owner-token";
/// Town Square, the channel gatewayd follows.
pub const CHANNEL: &str = "chan4mqx8ekdy1bwpu7s9ront3";

/// The running fake: how gatewayd is configured for it, and its URL for the owner's side.
#[derive(Debug, Clone)]
pub struct Trial {
    pub gateway: Gateway,
}

/// Starts the fake Mattermost (through `bxctl dev-exec`, so it ends with bxctl) and writes
/// the bot's token file.
pub fn start(state: &Path, stack: &Stack, held: &mut StateLock) -> Result<Trial, DevError> {
    let mut cmd = Command::new(std::env::current_exe().map_err(DevError::CurrentExe)?);
    cmd.arg("dev-exec")
        .arg(bin("fake-mattermost")?)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--token",
            BOT_TOKEN,
            "--bot-user-id",
            BOT_ID,
        ])
        .arg("--user")
        .arg(format!("{OWNER_NAME}:{OWNER_ID}:{OWNER_TOKEN}"))
        .args(["--channel", CHANNEL]);
    let addr = stack.start_listening(
        "fake-mattermost",
        cmd,
        &state.join("logs/fake-mattermost.log"),
        held,
    )?;
    let token_file = state.join("mattermost-token");
    std::fs::write(&token_file, format!("{BOT_TOKEN}\n")).map_err(|source| DevError::Write {
        path: token_file.clone(),
        error: source,
    })?;
    Ok(Trial {
        gateway: Gateway {
            server: format!("http://{addr}"),
            token_file,
            owner: OWNER_ID.to_owned(),
            channel: CHANNEL.to_owned(),
        },
    })
}
