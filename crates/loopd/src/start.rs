//! Start-up and shutdown: the inherited socket first, READY once it serves.

use std::sync::Arc;
use std::time::Duration;

use daemon::config::Config;
use daemon::listen::Inherited;
use daemon::serve::{self, Activity, Policy};
use daemon::{CommonArgs, log, notify};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::server;
use crate::turn::Looper;

#[derive(Debug, clap::Parser)]
#[command(name = "loopd", version, about = "boxmaker's agent loop")]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
}

pub use daemon::{Error, err};

/// How long shutdown waits for turns in flight (their log lines are already fsynced; this
/// only spares the owner a cut-off reply).
const DRAIN: Duration = Duration::from_secs(10);

pub fn run(args: Args) -> Result<(), Error> {
    let mut inherited = Inherited::from_env().map_err(err)?;
    let config = Config::load(&args.common.config).map_err(err)?;
    let chat = config.peers.chat.clone().ok_or_else(|| {
        Error(format!(
            "{}: peers.chat is not set: name who may chat with loopd",
            args.common.config.display()
        ))
    })?;
    if args.common.check_config {
        let line = format!("{}: good\n", args.common.config.display());
        return std::io::Write::write_all(&mut std::io::stdout().lock(), line.as_bytes())
            .map_err(err);
    }
    let listener = inherited
        .take_or_bind("chat", &config.sockets.chat_loop_sock())
        .map_err(err)?;
    let mut signals = Signals::new([SIGTERM, SIGINT]).map_err(err)?;
    let policy = Policy {
        name: "chat",
        // The owner's chat group, and gatewayd when it is configured.
        peers: std::iter::once(chat)
            .chain(config.peers.gateway.clone())
            .collect(),
        max_connections: 16,
        idle: Duration::from_secs(3600),
        frame: config.broker.frame_deadline,
    };
    let looper = Arc::new(Looper::new(config).map_err(err)?);
    let activity = Arc::new(Activity::default());
    let (l, a) = (looper.clone(), activity.clone());
    let handle = Arc::new(move |conn, who: &str| server::serve(&l, conn, who, &a));
    let a = activity.clone();
    std::thread::Builder::new()
        .name("chat-accept".into())
        .spawn(move || serve::accept_loop(listener, policy, a, handle))
        .map_err(err)?;
    // Alive while the session store can be read: the one thing every turn needs.
    let l = looper.clone();
    notify::spawn_watchdog(move || l.store().ids().is_ok()).map_err(err)?;
    log::info(format_args!("serving the chat socket"));
    notify::ready("serving");
    if let Some(signal) = signals.forever().next() {
        log::info(format_args!("signal {signal}: stopping"));
    }
    notify::stopping();
    activity.drain(DRAIN);
    Ok(())
}
