//! `bxctl gateway setup`: the ids gatewayd needs, found by the names a person knows. With
//! the bot's token it asks the Mattermost server (REST API v4, as Mattermost documents it):
//! `GET /users/me` (the token works; the bot's name), `GET /users/username/{owner}`, `GET
//! /teams/name/{team}` and `GET /teams/{team_id}/channels/name/{channel}` (the bot can read
//! the channel), then prints the NixOS module's `services.boxmaker.gateway` with those ids.
//! It changes nothing on the server or here.

use std::path::{Path, PathBuf};

use crate::mm::{Mattermost, MmError};

/// What `bxctl gateway setup` was given.
#[derive(Debug, Clone, clap::Args)]
pub struct SetupArgs {
    /// The Mattermost server's base URL, `https://chat.example.com`.
    #[arg(long, value_name = "URL")]
    pub server: String,
    /// A file holding the bot's access token (only read).
    #[arg(long, value_name = "FILE")]
    pub token_file: PathBuf,
    /// The owner's Mattermost user name (without @).
    #[arg(long, value_name = "NAME")]
    pub owner: String,
    /// The channel, as TEAM/NAME (the names in its URL: https://chat.example.com/TEAM/channels/NAME).
    #[arg(long, value_name = "TEAM/NAME")]
    pub channel: String,
}

/// Which look-up failed, for its message and help.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The token file cannot be read, or holds no token.
    #[error(
        "--token-file {}: {why}\nhelp: the bot's access token, as Mattermost showed it \
         once when the bot was made (docs/gateway.md)",
        path.display()
    )]
    Token { path: PathBuf, why: String },
    /// A name that cannot be one (`what`: owner, team, channel).
    #[error(
        "--{what} {}: not a Mattermost {what} name\nhelp: {}",
        inert::line(name),
        name_help(what)
    )]
    Name { what: &'static str, name: String },
    /// `--server` is not an http(s) URL.
    #[error(
        "--server {}: not an http:// or https:// URL\nhelp: the address you open \
         Mattermost at, https://chat.example.com",
        inert::line(server)
    )]
    Server { server: String },
    /// A call failed: `step` says what was looked up.
    #[error("{}", call_failed(step, error))]
    Call { step: Step, error: Box<MmError> },
    /// The server answered an id that is not a Mattermost id.
    #[error(
        "the server answered an id that is not a Mattermost id: {}\nhelp: is --server \
         a Mattermost server?",
        inert::line(id)
    )]
    BadId { id: String },
}

/// What a name given as `--{what}` should be.
fn name_help(what: &str) -> &'static str {
    match what {
        "owner" => "the owner's user name as Mattermost shows it, without @",
        _ => {
            "the channel as TEAM/NAME, the two names in its URL \
              (https://chat.example.com/TEAM/channels/NAME)"
        }
    }
}

/// A look-up that failed: what was looked up, the server's answer, and what to check.
fn call_failed(step: &Step, error: &MmError) -> String {
    let (what, help) = match step {
        Step::Bot => (
            "the bot's token".to_owned(),
            "is this the bot's access token, and is the server's address right? A \
             lost token cannot be shown again: make a new one under the bot's Create \
             New Token (docs/gateway.md)"
                .to_owned(),
        ),
        Step::Owner(name) => (
            format!("the user @{name}"),
            "the owner's user name as Mattermost shows it, without @".to_owned(),
        ),
        Step::Team(team) => (
            format!("the team {team}"),
            "the team's name as in its URL, https://chat.example.com/TEAM/…; add the \
             bot to the team (docs/gateway.md)"
                .to_owned(),
        ),
        Step::Channel(team, name) => (
            format!("the channel {team}/{name}"),
            "the channel's name as in its URL, …/TEAM/channels/NAME; add the bot to \
             the channel, a private one included (docs/gateway.md)"
                .to_owned(),
        ),
    };
    format!("looking up {what}: {error}\nhelp: {help}")
}

/// The look-ups, in order.
#[derive(Debug, Clone)]
pub enum Step {
    Bot,
    Owner(String),
    Team(String),
    Channel(String, String),
}

/// A Mattermost name: lower-case letters, digits, `.`, `_` and `-` (user names may hold `.`).
fn name_ok(name: &str, dots: bool) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| {
            c.is_ascii_lowercase()
                || c.is_ascii_digit()
                || c == '-'
                || c == '_'
                || (dots && c == '.')
        })
}

/// A Nix string literal of `s`.
fn nix_string(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace("${", "\\${");
    format!("\"{escaped}\"")
}

fn id_of(v: &serde_json::Value) -> String {
    v["id"].as_str().unwrap_or_default().to_owned()
}

/// Looks the ids up; the text to print.
pub fn setup(args: &SetupArgs) -> Result<String, SetupError> {
    if !(args.server.starts_with("https://") || args.server.starts_with("http://")) {
        return Err(SetupError::Server {
            server: args.server.clone(),
        });
    }
    let token = std::fs::read_to_string(&args.token_file)
        .map_err(|e| e.to_string())
        .and_then(|t| {
            let t = t.trim().to_owned();
            if t.is_empty() {
                Err("the file is empty".to_owned())
            } else {
                Ok(t)
            }
        })
        .map_err(|why| SetupError::Token {
            path: args.token_file.clone(),
            why,
        })?;
    if !name_ok(&args.owner, true) {
        return Err(SetupError::Name {
            what: "owner",
            name: args.owner.clone(),
        });
    }
    let Some((team, channel)) = args
        .channel
        .split_once('/')
        .filter(|(t, c)| name_ok(t, false) && name_ok(c, false))
    else {
        return Err(SetupError::Name {
            what: "channel",
            name: args.channel.clone(),
        });
    };
    let mm = Mattermost::new(&args.server, &token);
    let call = |step: Step, path: String| {
        mm.get(&path).map_err(|source| SetupError::Call {
            step,
            error: Box::new(source),
        })
    };
    let bot = call(Step::Bot, "/users/me".to_owned())?;
    let owner = call(
        Step::Owner(args.owner.clone()),
        format!("/users/username/{}", args.owner),
    )?;
    let team_v = call(Step::Team(team.to_owned()), format!("/teams/name/{team}"))?;
    let team_id = id_of(&team_v);
    let channel_v = call(
        Step::Channel(team.to_owned(), channel.to_owned()),
        format!("/teams/{team_id}/channels/name/{channel}"),
    )?;
    let (owner_id, channel_id) = (id_of(&owner), id_of(&channel_v));
    // Ids go into configuration: only what has an id's form is printed.
    for id in [&owner_id, &channel_id] {
        if !(id.len() == 26 && id.bytes().all(|b| b.is_ascii_alphanumeric())) {
            return Err(SetupError::BadId { id: id.clone() });
        }
    }
    let token_file = std::path::absolute(&args.token_file).unwrap_or(args.token_file.clone());
    Ok(snippet(
        &args.server,
        &bot,
        &args.owner,
        &owner_id,
        team,
        channel,
        &channel_id,
        &token_file,
    ))
}

#[allow(clippy::too_many_arguments)]
fn snippet(
    server: &str,
    bot: &serde_json::Value,
    owner: &str,
    owner_id: &str,
    team: &str,
    channel: &str,
    channel_id: &str,
    token_file: &Path,
) -> String {
    format!(
        "Mattermost at {}: the token is the bot @{}'s; owner @{owner} is {owner_id}; channel \
         {team}/{channel} is {channel_id}, and the bot can read it.\n\
         For the NixOS module (docs/nixos.md, docs/gateway.md):\n\n\
         services.boxmaker.gateway = {{\n  enable = true;\n  server = {};\n  \
         owners = [ \"{owner_id}\" ]; # @{owner}\n  channel = \"{channel_id}\"; # {team}/{channel}\n  \
         tokenFile = {}; # outside the Nix store\n}};\n",
        inert::line(server),
        inert::line(bot["username"].as_str().unwrap_or("?")),
        nix_string(server),
        nix_string(&token_file.display().to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_nix_strings() {
        assert!(name_ok("alice.b", true));
        assert!(!name_ok("alice.b", false));
        assert!(!name_ok("Alice", true));
        assert!(!name_ok("", true));
        assert!(!name_ok("a/b", true));
        assert_eq!(nix_string("a\"b${c}\\"), "\"a\\\"b\\${c}\\\\\"");
    }
}
