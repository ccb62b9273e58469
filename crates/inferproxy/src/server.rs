//! Accepting connections: the limit on how many are served at once, the SO_PEERCRED check,
//! one thread per connection, and the STATUS line systemd shows.

use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use daemon::config::{Config, Infer, Peer};
use daemon::{log, notify, peer};

use crate::reply;

/// What every connection thread shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub infer: Infer,
    pub loopd: Peer,
    active: AtomicUsize,
    /// Whether the last attempt reached llama-server; the STATUS line changes with it.
    reachable: Mutex<Option<bool>>,
}

impl Shared {
    pub fn new(config: Config) -> Self {
        Self {
            infer: config.infer,
            loopd: config.peers.loopd,
            active: AtomicUsize::new(0),
            reachable: Mutex::new(None),
        }
    }

    pub fn serving_status(&self) -> String {
        format!("serving; upstream {}", self.infer.upstream)
    }

    /// Records whether llama-server answered, and tells systemd when that changes.
    pub fn upstream_reached(&self, ok: bool) {
        let mut last = daemon::lock(&self.reachable);
        if *last == Some(ok) {
            return;
        }
        *last = Some(ok);
        if ok {
            notify::status(&self.serving_status());
        } else {
            notify::status(&format!(
                "serving; llama-server at {} is not answering",
                self.infer.upstream
            ));
        }
    }
}

/// One counted connection: the count goes down however its thread ends, or when the
/// thread could not even start.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How many connections refused for being past the limit may wait for their 503.
const BUSY_QUEUE: usize = 64;

/// Answers connections past the limit with 503, one at a time on a thread of its own, so
/// that neither the accept loop waits nor a flood of them starts threads. Past its queue a
/// connection is closed unanswered.
fn busy_answerer() -> Option<SyncSender<UnixStream>> {
    let (tx, rx) = mpsc::sync_channel::<UnixStream>(BUSY_QUEUE);
    let spawned = std::thread::Builder::new()
        .name("busy".into())
        .spawn(move || {
            for stream in rx {
                let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                reply::error(&stream, 503, "too many connections");
            }
        });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            log::error(format_args!("cannot start the busy thread: {e}"));
            None
        }
    }
}

/// Accepts connections until the process ends.
pub(crate) fn accept_loop(shared: &Arc<Shared>, listener: &UnixListener) {
    let busy = busy_answerer();
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                log::warn(format_args!("accept: {e}"));
                // Out of descriptors, say: do not spin.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let max = shared.infer.max_connections;
        if shared.active.fetch_add(1, Ordering::SeqCst) >= max {
            shared.active.fetch_sub(1, Ordering::SeqCst);
            log::warn(format_args!("at {max} connections, refusing one with 503"));
            if let Some(busy) = &busy
                && let Err(TrySendError::Full(_)) = busy.try_send(stream)
            {
                log::warn(format_args!(
                    "too many refused connections; closing one unanswered"
                ));
            }
            continue;
        }
        let slot = Slot(shared.clone());
        let spawned = std::thread::Builder::new()
            .name("conn".into())
            .spawn(move || connection(&slot.0, &stream));
        if let Err(e) = spawned {
            // The closure, and with it the slot and the stream, went with the error.
            log::error(format_args!("cannot start a connection thread: {e}"));
        }
    }
}

fn connection(shared: &Shared, stream: &UnixStream) {
    let _ = stream.set_write_timeout(Some(shared.infer.idle_timeout));
    let who = match peer::identify(stream) {
        Ok(who) if peer::admits(&shared.loopd, &who) => who,
        Ok(who) => {
            log::warn(format_args!(
                "refused {who} (pid {}): not {:?}",
                who.pid, shared.loopd
            ));
            reply::error(stream, 403, "this socket does not admit you");
            return;
        }
        Err(e) => {
            log::warn(format_args!("refused a peer: SO_PEERCRED: {e}"));
            reply::error(stream, 403, "this socket does not admit you");
            return;
        }
    };
    crate::forward::exchange(shared, stream, &who.to_string());
}
