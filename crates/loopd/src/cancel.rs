//! Cancelling a turn: the owner's client hangs up mid-turn (Ctrl-C in `bxctl chat`). The
//! turn then asks the model nothing more and runs no further call; a call waiting for
//! approval is withdrawn at once
//! by shutting down loopd's sending side of that call's broker connection (brokerd sees the
//! hang-up, denies the call and audits it as refused, and its answer still reaches loopd);
//! a tool already running finishes, and its result is logged like any other.

use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use daemon::lock;

#[derive(Debug, Default)]
pub struct Cancel {
    cancelled: AtomicBool,
    /// The broker connection of the call under way, if any.
    call: Mutex<Option<UnixStream>>,
}

impl Cancel {
    /// The owner cancelled: withdraw the call under way, ask nothing more.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        if let Some(call) = lock(&self.call).as_ref() {
            // Already closed: the call has ended anyway.
            let _ = call.shutdown(Shutdown::Write);
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// The broker connection of a call now waiting for approval (`None` when it has
    /// ended). A turn cancelled before withdraws it at once.
    pub fn during(&self, call: Option<UnixStream>) {
        let mut slot = lock(&self.call);
        if let Some(c) = &call
            && self.is_cancelled()
        {
            let _ = c.shutdown(Shutdown::Write);
        }
        *slot = call;
    }
}
