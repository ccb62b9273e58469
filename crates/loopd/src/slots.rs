//! The server's slots as loopd uses them: the one each session's requests are pinned to
//! ([`slot_of`]), what a session's slot holds after its answer ([`Usage`]), and how many
//! requests loopd sent to each slot ([`Sent`]), so that a cache loss can say whether another
//! session's request used the slot in between (docs/decisions.md L25).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use daemon::lock;
use proto::{Hash32, SessionId};

use crate::llm::Timings;

/// A session's server slot: stable for the session, spread over the slots. Two sessions
/// may share one.
pub fn slot_of(id: &SessionId, slots: u32) -> u32 {
    let h = Hash32::digest(id.as_str().as_bytes());
    let h = h.as_bytes();
    let n = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    n % slots.max(1)
}

/// A session's last answer: the tokens the context held (for compaction), the tokens its
/// slot holds for the next request (for CacheLoss), and its request's number on the slot.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    pub filled: u64,
    pub cacheable: u64,
    pub seq: u64,
}

impl Usage {
    /// After an answer with `t`, to the request numbered `seq` on its slot. The slot holds
    /// the whole prompt and the answer but its last token (sampled last, so never evaluated
    /// into the cache). A next request that replays the answer and reuses less lost cache in
    /// the prompt or in the replayed answer itself (a text the server tokenizes otherwise
    /// than the model sampled it): either is a CacheLoss.
    pub fn after(t: &Timings, seq: u64) -> Self {
        Self {
            filled: t.cache_n + t.prompt_n + t.predicted_n,
            cacheable: t.cache_n + t.prompt_n + t.predicted_n.saturating_sub(1),
            seq,
        }
    }
}

/// The requests loopd sent to each slot, every one counted (a turn's and a compaction's),
/// and on the slot one at a time: a request waits until the slot's previous one is
/// answered, so the server serves each slot's requests in the order loopd counted them
/// (llama.cpp's server queues a request for a busy slot anyway).
#[derive(Debug, Default)]
pub struct Sent {
    slots: Mutex<HashMap<u32, Slot>>,
    free: Condvar,
}

/// One slot's count of requests, and whether one is on it now.
#[derive(Debug, Default)]
struct Slot {
    count: u64,
    busy: bool,
}

/// A request on its slot: its number there (`seq`); the slot is the request's until this
/// drops (once its answer is in, or it failed).
#[derive(Debug)]
pub struct OnSlot<'a> {
    sent: &'a Sent,
    slot: u32,
    pub seq: u64,
}

/// Why a request did not get its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The turn was cancelled meanwhile.
    Cancelled,
    /// Another request held the slot for longer than a request may take.
    TimedOut,
}

/// How often a request waiting for its slot looks at its cancel.
const LOOK_EVERY: Duration = Duration::from_millis(100);

impl Sent {
    /// Waits until no other request of loopd's is on `slot`, then counts one more request
    /// to it, just before it is sent; gives up when `cancelled` says so (looked at every
    /// [`LOOK_EVERY`]) or after `limit` (a request's own time limit: the one on the slot
    /// has it too), counting nothing.
    pub fn take(
        &self,
        slot: u32,
        limit: Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<OnSlot<'_>, Waited> {
        let until = Instant::now() + limit;
        let mut slots = lock(&self.slots);
        loop {
            let s = slots.entry(slot).or_default();
            if !s.busy {
                s.busy = true;
                s.count += 1;
                let seq = s.count;
                return Ok(OnSlot {
                    sent: self,
                    slot,
                    seq,
                });
            }
            if cancelled() {
                return Err(Waited::Cancelled);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Waited::TimedOut);
            }
            slots = self
                .free
                .wait_timeout(slots, left.min(LOOK_EVERY))
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for OnSlot<'_> {
    fn drop(&mut self) {
        lock(&self.sent.slots).entry(self.slot).or_default().busy = false;
        self.sent.free.notify_all();
    }
}

/// Whether a request numbered `now` on its slot follows the session's previous request
/// (numbered `previous`) with another request in between: another session's, which may
/// have evicted what the slot held for this one. A slot's requests are served one at a time
/// in the order they were counted ([`Sent::take`]), so a loss with none in between is the
/// template's or the server's own (docs/decisions.md L25, L26).
pub fn shared(previous: u64, now: u64) -> bool {
    now.saturating_sub(previous) > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(30);

    /// A request waiting for a busy slot gives up when its turn is cancelled, or past its
    /// limit, and counts nothing: the slot's next request follows the one on it.
    #[test]
    fn a_wait_for_a_busy_slot_ends_at_a_cancel_or_the_limit_and_counts_nothing() {
        let sent = Sent::default();
        let held = sent.take(0, LIMIT, &|| false).expect("free");
        assert_eq!(sent.take(0, LIMIT, &|| true).err(), Some(Waited::Cancelled));
        assert_eq!(
            sent.take(0, Duration::from_millis(1), &|| false).err(),
            Some(Waited::TimedOut)
        );
        drop(held);
        assert_eq!(sent.take(0, LIMIT, &|| false).expect("free").seq, 2);
    }

    #[test]
    fn a_slot_counts_its_own_requests_and_another_in_between_is_shared() {
        let sent = Sent::default();
        let a1 = sent.take(0, LIMIT, &|| false).expect("free").seq;
        let a2 = sent.take(0, LIMIT, &|| false).expect("free").seq;
        assert!(!shared(a1, a2), "the session's own next request");
        // Another slot's requests do not move this one's count.
        assert_eq!(sent.take(1, LIMIT, &|| false).expect("free").seq, 1);
        let other = sent.take(0, LIMIT, &|| false).expect("free").seq;
        let a3 = sent.take(0, LIMIT, &|| false).expect("free").seq;
        assert!(shared(a2, a3), "{other} came between {a2} and {a3}");
        assert!(!shared(other, a3));
    }

    /// A second request to a slot waits until the first is answered (its guard dropped),
    /// then counts after it; another slot's does not wait.
    #[test]
    fn a_slot_serves_one_request_at_a_time_in_the_order_counted() {
        let sent = Sent::default();
        let order = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            let first = sent.take(0, LIMIT, &|| false).expect("free");
            let waiter = s.spawn(|| {
                let second = sent.take(0, LIMIT, &|| false).expect("freed");
                lock(&order).push(("second", second.seq));
            });
            // Another slot is free meanwhile.
            assert_eq!(sent.take(1, LIMIT, &|| false).expect("free").seq, 1);
            std::thread::sleep(Duration::from_millis(100));
            lock(&order).push(("first", first.seq));
            drop(first);
            waiter.join().expect("the waiter");
        });
        assert_eq!(*lock(&order), [("first", 1), ("second", 2)]);
    }

    #[test]
    fn a_session_keeps_its_slot() {
        let id = SessionId::new("s-20261201-0123456789abcdef").expect("id");
        assert!(slot_of(&id, 4) < 4);
        assert_eq!(slot_of(&id, 0), 0, "no slots reported: slot 0");
    }
}
