//! Signals while bxctl chats. SIGINT during a turn cancels that turn: bxctl hangs up its
//! loopd connection, and loopd withdraws a call waiting for approval, lets a running tool
//! finish and logs it, and asks the model nothing more (the session goes on with the next
//! message). SIGINT with no turn under way, SIGTERM and SIGHUP (the terminal closed) stop
//! bxctl: the terminal's mode is put back, `on_stop` runs (`bxctl dev` stops its stack),
//! and bxctl exits with 128 + the signal's number. At the prompt Ctrl-C is a key the line
//! editor reads, not a signal: it leaves, like `/quit`.

use std::io;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use daemon::lock;
use nix::sys::termios::{SetArg, tcgetattr, tcsetattr};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The turn under way, for SIGINT to cancel.
#[derive(Debug, Default)]
pub struct Interrupt {
    turn: Mutex<Option<UnixStream>>,
    cancelled: AtomicBool,
}

impl Interrupt {
    /// The loopd connection of the turn now under way (`None`: no turn).
    pub fn during(&self, turn: Option<UnixStream>) {
        *lock(&self.turn) = turn;
    }

    /// Hangs up the turn under way, if there is one.
    fn cancel(&self) -> bool {
        match lock(&self.turn).take() {
            Some(turn) => {
                self.cancelled.store(true, Ordering::Release);
                // Already closed: the turn has ended anyway.
                let _ = turn.shutdown(Shutdown::Both);
                true
            }
            None => false,
        }
    }

    /// Whether the turn under way (or the last one) was cancelled, without forgetting it.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Whether the last turn was cancelled (and forgets it).
    pub fn take_cancelled(&self) -> bool {
        self.cancelled.swap(false, Ordering::AcqRel)
    }
}

/// Watches SIGINT, SIGTERM and SIGHUP on a thread of their own (see the module's comment).
pub fn watch(interrupt: Arc<Interrupt>, on_stop: impl FnOnce() + Send + 'static) -> io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    // The terminal's mode now, before the line editor makes it raw.
    let saved = tcgetattr(io::stdin()).ok();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if signal == SIGINT && interrupt.cancel() {
                    continue;
                }
                if let Some(t) = &saved {
                    let _ = tcsetattr(io::stdin(), SetArg::TCSANOW, t);
                }
                on_stop();
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}
