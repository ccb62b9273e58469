//! Cancelling a turn: the owner's client hangs up mid-turn (Ctrl-C in `bxctl chat`). The
//! turn then asks the model nothing more and runs no further call; the model's stream under
//! way is cut (its partial answer is not logged, as when a stream breaks); a call waiting
//! for approval is withdrawn at once by shutting down loopd's sending side of that call's
//! broker connection (brokerd sees the hang-up, denies the call and audits it as refused,
//! and its answer still reaches loopd); a tool already running finishes, and its result is
//! logged like any other.

use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use daemon::lock;

#[derive(Debug, Default)]
pub struct Cancel {
    cancelled: AtomicBool,
    /// The connection to shut down on cancel, and how: a broker call waiting for approval
    /// (its sending side, so brokerd's denial still comes back), or the model's stream
    /// (both sides: nothing more of it is wanted).
    watched: Mutex<Option<(UnixStream, Shutdown)>>,
}

impl Cancel {
    /// The owner cancelled: withdraw the call under way, ask nothing more.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        if let Some((conn, how)) = lock(&self.watched).as_ref() {
            // Already closed: it has ended anyway.
            let _ = conn.shutdown(*how);
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// The broker connection of a call now waiting for approval (`None` when it has
    /// ended). A turn cancelled before withdraws it at once.
    pub fn during(&self, call: Option<UnixStream>) {
        self.watch(call.map(|c| (c, Shutdown::Write)));
    }

    /// The model's stream now under way (`None` when it has ended): a cancel cuts it, so a
    /// turn waiting for its first token, or streaming a long answer, stops at once.
    pub fn streaming(&self, model: Option<UnixStream>) {
        self.watch(model.map(|m| (m, Shutdown::Both)));
    }

    fn watch(&self, conn: Option<(UnixStream, Shutdown)>) {
        let mut slot = lock(&self.watched);
        if let Some((c, how)) = &conn
            && self.is_cancelled()
        {
            let _ = c.shutdown(*how);
        }
        *slot = conn;
    }
}
