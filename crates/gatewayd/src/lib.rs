//! gatewayd: the owner chats with boxmaker from Mattermost. It follows the channel's posts
//! over the WebSocket event API (catching up through REST after every reconnect), hears only
//! the allowlisted owner ids, and answers each in its thread through loopd's chat channel on
//! loop.sock, the reply streamed by editing one post and made inert (BRIEF decision 12).

mod follow;
mod mm;
pub mod render;
mod reply;
mod state;

use std::fmt;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use daemon::config::{Config, Gateway};
use daemon::{CommonArgs, log, notify};
use proto::SessionId;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::mm::{Client, Post};
use crate::state::Store;

#[derive(Debug, clap::Parser)]
#[command(name = "gatewayd", version, about = "boxmaker's Mattermost gateway")]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn err(e: impl fmt::Display) -> Error {
    Error(e.to_string())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The bot token: `token_file` when set (development), else the systemd credential.
fn token(g: &Gateway) -> Result<String, Error> {
    let path = match &g.token_file {
        Some(p) => p.clone(),
        None => std::env::var_os("CREDENTIALS_DIRECTORY")
            .map(|d| std::path::PathBuf::from(d).join(&g.token_credential))
            .ok_or_else(|| Error("no $CREDENTIALS_DIRECTORY and no gateway.token_file".into()))?,
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error(format!("the bot token {}: {e}", path.display())))?;
    let token = text.trim().to_owned();
    if token.is_empty() {
        return Err(Error(format!("the bot token {} is empty", path.display())));
    }
    Ok(token)
}

pub fn run(args: Args) -> Result<(), Error> {
    let config = Config::load(&args.common.config).map_err(err)?;
    let g = config.gateway.clone().ok_or_else(|| {
        Error(format!(
            "{}: no [gateway] table: name the Mattermost server, owners and channel",
            args.common.config.display()
        ))
    })?;
    if args.common.check_config {
        let line = format!("{}: good\n", args.common.config.display());
        return std::io::Write::write_all(&mut std::io::stdout().lock(), line.as_bytes())
            .map_err(err);
    }
    let token = token(&g)?;
    let mut signals = Signals::new([SIGTERM, SIGINT]).map_err(err)?;
    let store = Store::open(g.state_dir(&config.home), now_ms()).map_err(err)?;
    let store = Arc::new(Mutex::new(store));
    let client = Client::new(&g.server, &token);
    let (tx, rx) = mpsc::channel::<Post>();
    let (c, s, channel) = (client.clone(), store.clone(), g.channel.clone());
    std::thread::Builder::new()
        .name("follow".into())
        .spawn(move || follow::run(&c, &token, &channel, &s, &tx))
        .map_err(err)?;
    let loop_sock = config.sockets.chat_loop.join("loop.sock");
    log::info(format_args!("gateway to {} started", g.server));
    std::thread::Builder::new()
        .name("answer".into())
        .spawn(move || {
            let bot = bot_id(&client);
            for post in rx {
                handle(&client, &bot, &g, &store, &loop_sock, &post);
            }
        })
        .map_err(err)?;
    notify::ready("serving");
    if let Some(signal) = signals.forever().next() {
        log::info(format_args!("signal {signal}: stopping"));
    }
    notify::stopping();
    Ok(())
}

/// The bot's user id, asked until Mattermost answers.
fn bot_id(client: &Client) -> String {
    let mut wait = Duration::from_millis(250);
    loop {
        match client.me() {
            Ok(id) => return id,
            Err(e) => log::warn(format_args!("who am I: {e}; retrying in {wait:?}")),
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}

fn save(store: &Store) {
    if let Err(e) = store.save() {
        log::error(format_args!("saving gatewayd's state: {e}"));
    }
}

fn lock(store: &Mutex<Store>) -> std::sync::MutexGuard<'_, Store> {
    store
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One post from the channel: answered once if the owner wrote it, otherwise left alone.
fn handle(
    client: &Client,
    bot: &str,
    g: &Gateway,
    store: &Mutex<Store>,
    sock: &std::path::Path,
    post: &Post,
) {
    if post.user_id == bot {
        return;
    }
    let session = {
        let mut s = lock(store);
        if s.is_handled(&post.id) {
            return;
        }
        s.mark(&post.id, post.create_at);
        let from_bot = ["from_bot", "from_webhook"]
            .iter()
            .any(|k| post.props[k] == "true");
        if !post.kind.is_empty() || from_bot {
            save(&s);
            return;
        }
        if !g.owners.contains(&post.user_id) {
            s.saved.ignored += 1;
            log::info(format_args!(
                "ignored a post from {} (not an owner; {} ignored so far)",
                post.user_id, s.saved.ignored
            ));
            save(&s);
            return;
        }
        save(&s);
        let root = if post.root_id.is_empty() {
            &post.id
        } else {
            &post.root_id
        };
        s.saved
            .threads
            .get(root)
            .and_then(|id| SessionId::new(id).ok())
    };
    let root = if post.root_id.is_empty() {
        post.id.clone()
    } else {
        post.root_id.clone()
    };
    let turn = reply::Turn {
        client,
        bot,
        channel: &post.channel_id,
        root: &root,
        interval: g.edit_interval,
        loop_sock: sock,
    };
    reply::answer(&turn, session, &post.message, &mut |session| {
        let mut s = lock(store);
        if s.saved.threads.get(&root) != Some(&session.to_string()) {
            s.saved.threads.insert(root.clone(), session.to_string());
            save(&s);
        }
    });
}
