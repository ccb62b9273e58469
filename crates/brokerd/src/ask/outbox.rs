//! What brokerd queues for gatewayd when `[gateway]` is configured: cards to post,
//! outcomes to show and the audit chain's alert, taken by the link thread (`gateway::run`).
//! It counts the outcomes not yet shown, so that stopping can wait a little until the cards
//! of the calls it just denied say so. A failed `bxctl verify`'s alert is not queued here
//! but waits in a slot of one (`verify_slot`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use daemon::lock;
use proto::approval::ApprovalCard;
use proto::gateway::{ApprovalUpdate, AuditAlert};

/// What the link sends to gatewayd.
#[derive(Debug, Clone)]
pub enum Outgoing {
    /// Boxed: a write's card (its diff and hashes) makes it far larger than the others.
    Post(Box<ApprovalCard>),
    Update(ApprovalUpdate),
    /// A full verification of the audit log failed (`audit_verify`).
    Alert(AuditAlert),
}

#[derive(Debug)]
pub struct Outbox {
    tx: Option<mpsc::Sender<Outgoing>>,
    rx: Mutex<Option<mpsc::Receiver<Outgoing>>>,
    /// Outcomes queued and not yet taken by gatewayd.
    unshown: AtomicUsize,
}

impl Outbox {
    /// An outbox that queues when `enabled` (a gateway is configured), else drops.
    pub fn new(enabled: bool) -> Self {
        let (tx, rx) = if enabled {
            let (tx, rx) = mpsc::channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        Self {
            tx,
            rx: Mutex::new(rx),
            unshown: AtomicUsize::new(0),
        }
    }

    /// The receiving end, once (`None` without a gateway).
    pub fn take(&self) -> Option<mpsc::Receiver<Outgoing>> {
        lock(&self.rx).take()
    }

    /// Queues `item` for gatewayd; without a gateway there is nobody to tell.
    pub fn tell(&self, item: Outgoing) {
        if let Some(tx) = &self.tx {
            if matches!(item, Outgoing::Update(_)) {
                self.unshown.fetch_add(1, Ordering::SeqCst);
            }
            // The receiver lives as long as the process (the link thread never returns).
            let _ = tx.send(item);
        }
    }

    /// gatewayd took one queued outcome.
    pub fn shown(&self) {
        self.unshown.fetch_sub(1, Ordering::SeqCst);
    }

    /// Waits up to `limit` until gatewayd has taken every queued outcome. Returns how many
    /// are left.
    pub fn flush(&self, limit: Duration) -> usize {
        let start = Instant::now();
        loop {
            let left = self.unshown.load(Ordering::SeqCst);
            if left == 0 || start.elapsed() >= limit {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
