//! gatewayd: the owner chats with boxmaker from Mattermost, and answers its approvals there.
//! It follows the channel's posts and reactions over the WebSocket event API (catching up
//! through REST after every reconnect), hears only the allowlisted owner ids as chat, and
//! answers each in its thread through loopd's chat channel on loop.sock, the reply streamed
//! by editing one post and made inert (BRIEF decision 12). On gateway.sock it serves
//! brokerd: approval cards become root posts, and every answer on them goes to brokerd,
//! never to loopd; brokerd's alerts (a broken audit chain, a failed `bxctl verify`) become
//! root posts with nothing to answer.

// Public for the crate's test binary (tests/gatewayd): the parts tested on their own.
mod alert;
pub mod card;
mod context;
mod desk;
mod dispatch;
mod error;
mod follow;
pub mod jobs;
mod mm;
pub mod render;
mod reply;
mod server;
pub mod state;
pub mod verdict;

use std::sync::{Arc, mpsc};
use std::time::Duration;

use config::{Config, Gateway};
use daemon::listen::Inherited;
use daemon::serve::Policy;
use daemon::service::Service;
use daemon::{CommonArgs, log};

use crate::context::Context;
use crate::desk::Desk;
use crate::dispatch::Dispatch;
use crate::mm::{Client, Post};
use crate::state::Store;

#[derive(Debug, clap::Parser)]
#[command(name = "gatewayd", version, about = "boxmaker's Mattermost gateway")]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
}

pub use crate::error::Error;

/// The bot token: `token_file` when set (development), else the systemd credential.
fn token(g: &Gateway) -> Result<String, Error> {
    let path = match &g.token_file {
        Some(p) => p.clone(),
        None => std::env::var_os("CREDENTIALS_DIRECTORY")
            .map(|d| std::path::PathBuf::from(d).join(&g.token_credential))
            .ok_or(Error::NoCredentials)?,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => return Err(Error::Token { path, error }),
    };
    let token = text.trim().to_owned();
    if token.is_empty() {
        return Err(Error::EmptyToken { path });
    }
    Ok(token)
}

pub fn run(args: Args) -> Result<(), Error> {
    // First, before any thread exists: the inherited socket is read from the environment.
    let inherited = Inherited::from_env()?;
    let config = Config::load(&args.common.config)?;
    let name = &args.common.config;
    let g = config.gateway.clone().ok_or_else(|| Error::NoGateway {
        config: name.clone(),
    })?;
    let broker = config
        .peers
        .broker
        .clone()
        .ok_or_else(|| Error::NoBrokerPeer {
            config: name.clone(),
        })?;
    if args.common.check_config {
        // The file must be there; what it holds is read and checked only at start (a build
        // that checks the config must never read the credential).
        if let Some(path) = &g.token_file
            && let Err(error) = std::fs::metadata(path)
        {
            return Err(Error::TokenFileMissing {
                path: path.clone(),
                error,
            });
        }
        let line = format!("{}: good\n", name.display());
        return std::io::Write::write_all(&mut std::io::stdout().lock(), line.as_bytes())
            .map_err(Error::Stdout);
    }
    let token = token(&g)?;
    let store = Store::open(g.state_dir(&config.home), mm::now_ms())?;
    let client = Client::new(&g.server, &token);
    let ctx = Arc::new(Context::new(
        client,
        g.server.clone(),
        g.channel.clone(),
        store,
    ));
    let desk = Arc::new(Desk::new(ctx.clone()));
    let policy = Policy {
        name: "gateway",
        peers: vec![broker],
        max_connections: 4,
        idle: Duration::from_secs(3600),
        frame: config.broker.frame_deadline,
    };
    let mut service = Service::new("gatewayd", inherited);
    let (d, a) = (desk.clone(), service.activity());
    service.framed(
        &config.sockets.broker_gateway_sock(),
        &policy,
        move |conn, who: &str| {
            server::serve(&d, conn, who, &a);
        },
    )?;
    // The job runners' side, when jobs are configured: each run's result for the owner.
    if !config.jobs.is_empty() {
        let dev = config.peers.jobs.clone();
        let policy = Policy {
            name: jobs::NAME,
            peers: config.job_runners(),
            max_connections: 4,
            idle: Duration::from_secs(60),
            frame: config.broker.frame_deadline,
        };
        let (c, a) = (ctx.clone(), service.activity());
        service.framed(
            &config.sockets.jobs_gateway_sock(),
            &policy,
            move |conn, who: &str| jobs::serve(&c, dev.as_ref(), conn, who, &a),
        )?;
    }
    // Alive while the state can be reached: every post, reaction and card goes through it,
    // and a thread stuck saving it holds it.
    let c = ctx.clone();
    service.watchdog(move || c.reachable(Duration::from_secs(1)));
    let (tx, rx) = mpsc::channel::<Post>();
    let (c, d) = (ctx.clone(), desk.clone());
    service.thread("follow", move || follow::run(&c, &d, &token, &tx));
    let loop_sock = config.sockets.chat_loop_sock();
    let broker_sock = config.sockets.chat_broker_sock();
    log::info(format_args!("gateway to {} started", g.server));
    service.thread("dispatch", move || {
        let bot = bot_id(ctx.client());
        let dispatch = Arc::new(Dispatch::new(ctx, desk, bot, g, loop_sock, broker_sock));
        dispatch.cut_off();
        for post in rx {
            dispatch.post(post);
        }
    });
    // The drain stays zero: gatewayd has always stopped at SIGTERM without waiting
    // (docs/decisions.md F14).
    Ok(service.run("serving")?)
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
