//! inferproxy: the only way from loopd to llama-server. It listens on `infer.sock` (plain
//! HTTP over a Unix socket), admits only loopd's user (SO_PEERCRED), forwards only the four
//! requests loopd needs (`POST /v1/chat/completions`, `GET /health`, `GET /props`,
//! `GET /v1/models`) to llama-server on loopback TCP and streams the answer back as it
//! arrives. Everything else is refused with 403, in particular `/slots*` and `POST /props`:
//! the server's KV cache holds every session's data.
//!
//! It is also the witness (`witness`): a chat request is forwarded only if nothing in it can
//! force what the model emits, and every answer is reported to brokerd (`witness.sock`)
//! before loopd gets its `[DONE]`; brokerd runs only the tool calls so reported.
//!
//! Threads (the start-up is `daemon::service`'s): the main thread waits for signals; one
//! thread accepts; one thread per connection (at most `infer.max_connections`, 503 past
//! that); one thread answers the refused; a watchdog thread when systemd asks for one.

mod abort;
mod forward;
mod proxy;
mod reply;
mod upstream;
mod watch;
mod witness;

use std::io::{self, Write};
use std::sync::Arc;

use config::{Config, ConfigError};
use daemon::CommonArgs;
use daemon::accept::Admission;
use daemon::listen::{Inherited, ListenError};
use daemon::service::{Service, StartError};

use crate::proxy::Proxy;
use crate::reply::Refusals;

pub use forward::ALLOWED;

#[derive(Debug, clap::Parser)]
#[command(
    name = "inferproxy",
    version,
    about = "boxmaker's proxy to llama-server"
)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Why inferproxy did not start; `main` prints it once and exits with its status
/// ([`daemon::exit::Status`]). Each text prints what it wraps (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("configuration: {0}")]
    Config(ConfigError),
    #[error("infer.sock: {0}")]
    Listen(ListenError),
    #[error("{0}")]
    Start(StartError),
    #[error("cannot write to stdout: {0}")]
    Output(io::Error),
}

impl daemon::exit::Status for Error {
    /// Every variant is listed, so a new one is given its status on purpose: 1, inferproxy
    /// did not start (the table is in `main.rs`).
    fn exit_code(&self) -> u8 {
        match self {
            Self::Config(_) | Self::Listen(_) | Self::Start(_) | Self::Output(_) => 1,
        }
    }
}

/// The name of the socket in the .socket unit (FileDescriptorName=).
pub const SOCKET_NAME: &str = "infer";
/// The socket's file name in `sockets.loop_infer`.
pub const SOCKET_FILE: &str = config::INFER_SOCK;

pub fn run(args: Args) -> Result<(), Error> {
    // First, before any thread exists: listenfd clears LISTEN_FDS as it reads them.
    let inherited = Inherited::from_env().map_err(Error::Listen)?;
    let config = Config::load(&args.common.config).map_err(Error::Config)?;
    let path = config.sockets.loop_infer_sock();
    if args.common.check_config {
        let line = format!(
            "{}: good; {} on {}, upstream {}\n",
            args.common.config.display(),
            SOCKET_FILE,
            config.sockets.loop_infer.display(),
            config.infer.upstream
        );
        return io::stdout()
            .lock()
            .write_all(line.as_bytes())
            .map_err(Error::Output);
    }
    let admission = Admission {
        name: SOCKET_NAME,
        peers: vec![config.peers.loopd],
        max_connections: config.infer.max_connections,
    };
    let proxy = Arc::new(Proxy::new(config.infer, config.sockets.infer_broker_sock()));
    let mut service = Service::new("inferproxy", inherited);
    let (p, activity) = (proxy.clone(), service.activity());
    let exchange = move |stream: std::os::unix::net::UnixStream, who: &str| {
        let _busy = activity.busy();
        let _ = stream.set_write_timeout(Some(p.infer.idle_timeout));
        forward::exchange(&p, &stream, who);
    };
    service
        .socket(&path, admission, Refusals::start(), exchange)
        .map_err(Error::Listen)?;
    // The drain stays zero, as before: SIGTERM cuts the streams in flight
    // (docs/decisions.md F14).
    service.run(&proxy.serving_status()).map_err(Error::Start)
}
