//! inferproxy: the only way from loopd to llama-server. It listens on `infer.sock` (plain
//! HTTP over a Unix socket), admits only loopd's user (SO_PEERCRED), forwards only the four
//! requests loopd needs (`POST /v1/chat/completions`, `GET /health`, `GET /props`,
//! `GET /v1/models`) to llama-server on loopback TCP and streams the answer back as it
//! arrives. Everything else is refused with 403, in particular `/slots*` and `POST /props`:
//! the server's KV cache holds every session's data.
//!
//! Threads: the main thread waits for signals; one thread accepts; one thread per
//! connection (at most `infer.max_connections`, 503 past that); a watchdog thread when
//! systemd asks for one.

mod forward;
mod reply;
mod server;
mod upstream;

use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;
use std::time::Duration;

use daemon::config::{Config, ConfigError};
use daemon::listen::{Inherited, ListenError};
use daemon::{CommonArgs, log, notify};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

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

/// Why inferproxy did not start; `main` prints it once.
#[derive(Debug)]
pub enum Error {
    Config(ConfigError),
    Listen(ListenError),
    Signals(io::Error),
    Thread(io::Error),
    Output(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "configuration: {e}"),
            Self::Listen(e) => write!(f, "infer.sock: {e}"),
            Self::Signals(e) => write!(f, "cannot watch signals: {e}"),
            Self::Thread(e) => write!(f, "cannot start a thread: {e}"),
            Self::Output(e) => write!(f, "cannot write to stdout: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::Listen(e) => Some(e),
            Self::Signals(e) | Self::Thread(e) | Self::Output(e) => Some(e),
        }
    }
}

/// The name of the socket in the .socket unit (FileDescriptorName=).
pub const SOCKET_NAME: &str = "infer";
/// The socket's file name in `sockets.loop_infer`.
pub const SOCKET_FILE: &str = daemon::config::INFER_SOCK;

pub fn run(args: Args) -> Result<(), Error> {
    // First, before any thread exists: listenfd clears LISTEN_FDS as it reads them.
    let mut inherited = Inherited::from_env().map_err(Error::Listen)?;
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
    let listener = inherited
        .take_or_bind(SOCKET_NAME, &path)
        .map_err(Error::Listen)?;
    if inherited.activated() {
        log::info(format_args!("{SOCKET_FILE} taken from systemd"));
    } else {
        log::info(format_args!("{SOCKET_FILE} bound at {}", path.display()));
    }
    let mut signals = Signals::new([SIGTERM, SIGINT]).map_err(Error::Signals)?;

    let shared = Arc::new(server::Shared::new(config));
    let accept = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("accept".into())
            .spawn(move || server::accept_loop(&shared, &listener))
            .map_err(Error::Thread)?
    };
    if let Some(every) = notify::watchdog_interval() {
        std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || watchdog(&accept, every))
            .map_err(Error::Thread)?;
    }
    let serving = shared.serving_status();
    log::info(format_args!("{serving}"));
    notify::ready(&serving);

    if let Some(signal) = signals.forever().next() {
        log::info(format_args!(
            "signal {signal}: stopping; streams in flight are cut"
        ));
    }
    notify::stopping();
    Ok(())
}

/// Pings the watchdog while the accept thread lives.
fn watchdog(accept: &std::thread::JoinHandle<()>, every: Duration) {
    while !accept.is_finished() {
        notify::watchdog();
        std::thread::sleep(every);
    }
    log::error(format_args!(
        "the accept thread ended; no more watchdog pings"
    ));
}
