//! The proxy's state that every connection shares: its settings, and whether llama-server
//! answered the last attempt, which the STATUS line systemd shows follows.

use std::path::PathBuf;
use std::sync::Mutex;

use config::Infer;
use daemon::notify;

/// What every connection shares: the proxy's settings, and what it last learnt of
/// llama-server.
#[derive(Debug)]
pub(crate) struct Proxy {
    pub infer: Infer,
    /// brokerd's `witness.sock`, where every completion is reported before its `[DONE]`.
    pub witness_sock: PathBuf,
    /// Whether the last attempt reached llama-server; the STATUS line changes with it.
    reachable: Mutex<Option<bool>>,
}

impl Proxy {
    pub fn new(infer: Infer, witness_sock: PathBuf) -> Self {
        Self {
            infer,
            witness_sock,
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
