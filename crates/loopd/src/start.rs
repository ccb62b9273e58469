//! Start-up and shutdown, through `daemon::service`: the inherited socket first, READY once
//! it serves.

use std::sync::Arc;
use std::time::Duration;

use config::Config;
use daemon::CommonArgs;
use daemon::listen::Inherited;
use daemon::serve::Policy;
use daemon::service::Service;

use crate::server;
use crate::turn::Looper;

#[derive(Debug, clap::Parser)]
#[command(name = "loopd", version, about = "boxmaker's agent loop")]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
}

use crate::Error;

/// How long shutdown waits for turns in flight (their log lines are already fsynced; this
/// only spares the owner a cut-off reply).
const DRAIN: Duration = Duration::from_secs(10);

pub fn run(args: Args) -> Result<(), Error> {
    let inherited = Inherited::from_env().map_err(Error::Inherit)?;
    let config = Config::load(&args.common.config).map_err(Error::Config)?;
    let chat = config.peers.chat.clone().ok_or_else(|| Error::NoChatPeer {
        config: args.common.config.clone(),
    })?;
    if args.common.check_config {
        let line = format!("{}: good\n", args.common.config.display());
        return std::io::Write::write_all(&mut std::io::stdout().lock(), line.as_bytes())
            .map_err(Error::Output);
    }
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
    let path = config.sockets.chat_loop_sock();
    // The job runners' side, when jobs are configured.
    let config_jobs = (!config.jobs.is_empty()).then(|| config.job_runners());
    let (jobs_path, frame_deadline) = (
        config.sockets.jobs_loop_sock(),
        config.broker.frame_deadline,
    );
    let looper = Arc::new(Looper::new(config).map_err(Error::Store)?);
    let mut service = Service::new("loopd", inherited);
    let (l, a) = (looper.clone(), service.activity());
    let listing = crate::listing::Listing::default();
    service
        .framed(&path, &policy, move |conn, who: &str| {
            server::serve(&l, &listing, conn, who, &a);
        })
        .map_err(Error::Listen)?;
    if let Some(runners) = config_jobs {
        let policy = Policy {
            name: crate::jobs::NAME,
            peers: runners,
            max_connections: 16,
            idle: Duration::from_secs(3600),
            frame: frame_deadline,
        };
        let (l, a) = (looper.clone(), service.activity());
        service
            .framed(&jobs_path, &policy, move |conn, who: &str| {
                crate::jobs::serve(&l, conn, who, &a);
            })
            .map_err(Error::Listen)?;
    }
    // Alive while the session store can be read: the one thing every turn needs.
    service.watchdog(move || looper.store().ids().is_ok());
    service.drain(DRAIN);
    service.run("serving the chat socket").map_err(Error::Start)
}
