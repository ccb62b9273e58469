//! brokerd runs only witnessed calls (issue 17, docs/decisions.md W1–W4). inferproxy
//! reports every completion it forwards on `witness.sock` (`sockets::witness`); the report is on
//! disk ([`store`]) before it is acknowledged, and so before loopd has the answer's
//! `[DONE]`. A tool request names the witnessed call it is ([`proto::attest::WitnessRef`]);
//! [`Witness::claim`] waits a bounded time for that completion's record, checks the call
//! against it and marks it used, under the store's lock, so no second request for it
//! passes. The use is durable in the decision's audit line, written before anything runs or
//! is answered, and marked again from the audit log at start (docs/decisions.md W9).

mod store;

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use daemon::lock;
use proto::DenyReason;
use proto::attest::{WitnessRef, WitnessReport};

pub use store::{Kept, Opened, Store, StoreError};

/// The store, and the wait of a tool request for a report that has not arrived yet.
#[derive(Debug)]
pub struct Witness {
    store: Mutex<Store>,
    /// Notified whenever a report is recorded.
    arrived: Condvar,
    /// `broker.witness_wait`.
    wait: Duration,
}

/// Why a report was not recorded (it is answered with a typed error; brokerd serves on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRecorded {
    /// That completion has a record already: a completion is reported once.
    Again,
}

/// A call that may not run: its reason and a detail for the owner.
pub type Unwitnessed = (DenyReason, String);

impl Witness {
    pub fn new(store: Store, wait: Duration) -> Self {
        Self {
            store: Mutex::new(store),
            arrived: Condvar::new(),
            wait,
        }
    }

    /// Whether the store can be reached: free, or freed within a second (a write and its
    /// fsync). A store stuck longer stops every call and every report, as a stuck audit
    /// writer does; the watchdog then stops pinging.
    pub fn alive(&self) -> bool {
        daemon::reachable(&self.store, Duration::from_secs(1))
    }

    /// A snapshot of the reports the store keeps.
    pub fn kept(&self) -> Kept {
        lock(&self.store).kept()
    }

    /// Records a report durably. `Err` only when the store cannot be written.
    pub fn record(&self, report: WitnessReport) -> Result<Result<(), NotRecorded>, StoreError> {
        let recorded = lock(&self.store).record(report)?;
        if !recorded {
            return Ok(Err(NotRecorded::Again));
        }
        self.arrived.notify_all();
        Ok(Ok(()))
    }

    /// Whether the call `w` names may run as `tool` with `arguments`: the model made it,
    /// exactly so, in an answer that ended normally, and it was never used before. Waits up
    /// to `broker.witness_wait` for the completion's report. A call that may run is marked
    /// used before this returns; the caller's audit line of its decision makes that durable
    /// (`AuditRecord::witness`), and nothing may run or be answered before that line is.
    pub fn claim(&self, w: &WitnessRef, tool: &str, arguments: &str) -> Result<(), Unwitnessed> {
        let until = Instant::now() + self.wait;
        let mut store = lock(&self.store);
        while store.get(&w.completion).is_none() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err((
                    DenyReason::NotWitnessed,
                    format!(
                        "inferproxy witnessed no completion {} (none reported within {:?}, \
                         or its record is no longer kept)",
                        w.completion, self.wait
                    ),
                ));
            }
            store = self
                .arrived
                .wait_timeout(store, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let Some(entry) = store.get(&w.completion) else {
            return Err((DenyReason::NotWitnessed, "no record".into()));
        };
        let report = &entry.report;
        let at = usize::try_from(w.index).unwrap_or(usize::MAX);
        let Some(call) = report.calls.get(at) else {
            return Err((
                DenyReason::NotWitnessed,
                format!(
                    "completion {} has {} tool calls, none at index {}",
                    w.completion,
                    report.calls.len(),
                    w.index
                ),
            ));
        };
        if !report.runnable {
            return Err((
                DenyReason::WitnessNotRunnable,
                format!(
                    "the answer of completion {} ended with finish_reason {:?}: its calls never run",
                    w.completion, report.finish
                ),
            ));
        }
        if call.name != tool || call.arguments != arguments {
            return Err((
                DenyReason::WitnessMismatch,
                format!(
                    "the model's call {} of completion {} is {} with other arguments than these",
                    w.index, w.completion, call.name
                ),
            ));
        }
        if entry.used.contains(&w.index) {
            return Err((
                DenyReason::AlreadyRun,
                format!(
                    "call {} of completion {} was run before: each runs once",
                    w.index, w.completion
                ),
            ));
        }
        store.mark_used(w);
        Ok(())
    }
}
