//! What every connection shares: the script, the slots, the rule counts, the request log and
//! the loading switch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::completion::Counts;
use crate::metrics::Metrics;
use crate::render::Msg;
use crate::script::{Answer, Script};
use crate::slots::Slots;

/// How many requests `GET /fake/requests` remembers.
pub const LOG_ENTRIES: usize = 1000;

/// Everything the connections share.
#[derive(Debug)]
pub struct State {
    /// The script in force.
    pub script: Script,
    /// The slots and their cached texts.
    pub slots: Slots,
    started: Instant,
    loading: Mutex<Option<bool>>,
    uses: Mutex<Vec<u64>>,
    log: Mutex<Vec<Value>>,
    rng: Mutex<u64>,
    tasks: AtomicU64,
    metrics: Mutex<Metrics>,
    default_answer: Answer,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl State {
    /// Fresh state for a script.
    pub fn new(script: Script) -> Self {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
            u64::try_from(d.as_nanos() & u128::from(u64::MAX)).unwrap_or(0)
        }) ^ (u64::from(std::process::id()) << 32)
            | 1;
        Self {
            slots: Slots::new(script.server.total_slots),
            uses: Mutex::new(vec![0; script.rules.len()]),
            default_answer: script
                .default
                .clone()
                .unwrap_or_else(Answer::builtin_default),
            script,
            started: Instant::now(),
            loading: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            rng: Mutex::new(seed),
            tasks: AtomicU64::new(0),
            metrics: Mutex::new(Metrics::default()),
        }
    }

    /// Adds a completion to the `/metrics` counters.
    pub fn count(&self, counts: &Counts) {
        lock(&self.metrics).add(counts);
    }

    /// The `/metrics` text.
    pub fn metrics(&self) -> String {
        let processing = self.slots.views().iter().filter(|v| v.busy).count();
        lock(&self.metrics).text(processing)
    }

    /// Whether the server pretends to load its model.
    pub fn is_loading(&self) -> bool {
        lock(&self.loading).unwrap_or_else(|| {
            self.started.elapsed() < Duration::from_millis(self.script.server.loading_ms)
        })
    }

    /// Picks the answer for a conversation and counts the rule's use: (label, answer).
    pub fn pick(&self, messages: &[Msg]) -> (String, &Answer) {
        let mut uses = lock(&self.uses);
        match self.script.pick(messages, &uses) {
            Some(i) => {
                uses[i] += 1;
                let rule = &self.script.rules[i];
                let label = rule
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("rule {}", i + 1));
                (label, &rule.answer)
            }
            None => ("default".to_owned(), &self.default_answer),
        }
    }

    /// A random 32-character alphanumeric id (xorshift64*; not for secrets).
    pub fn random_id(&self) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut state = lock(&self.rng);
        (0..32)
            .map(|_| {
                *state ^= *state >> 12;
                *state ^= *state << 25;
                *state ^= *state >> 27;
                let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
                let i = usize::try_from(r % ALPHABET.len() as u64).unwrap_or(0);
                char::from(ALPHABET[i])
            })
            .collect()
    }

    /// The next task number (as `/slots` reports `id_task`).
    pub fn next_task(&self) -> u64 {
        self.tasks.fetch_add(1, Ordering::Relaxed)
    }

    /// Appends to the request log (`GET /fake/requests`), which keeps the last
    /// [`LOG_ENTRIES`] requests.
    pub fn record(&self, entry: Value) {
        let mut log = lock(&self.log);
        if log.len() >= LOG_ENTRIES {
            log.remove(0);
        }
        log.push(entry);
    }

    /// The request log, oldest first (`GET /fake/requests`).
    pub fn requests(&self) -> Value {
        Value::Array(lock(&self.log).clone())
    }

    /// Pretends to load (`Some(true)`), to be loaded (`Some(false)`), or goes back to the
    /// script's `loading_ms` (`None`) (`POST /fake/loading`).
    pub fn set_loading(&self, loading: Option<bool>) {
        *lock(&self.loading) = loading;
    }
}
