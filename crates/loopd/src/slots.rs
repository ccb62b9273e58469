//! The server's slots as loopd uses them: the one each session's requests are pinned to
//! ([`slot_of`]), what a session's slot holds after its answer ([`Usage`]), and how many
//! requests loopd sent to each slot ([`Sent`]), so that a cache loss can say whether another
//! session's request used the slot in between (docs/decisions.md L25).

use std::collections::HashMap;
use std::sync::Mutex;

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

/// The requests loopd sent to each slot, every one counted: a turn's and a compaction's.
#[derive(Debug, Default)]
pub struct Sent(Mutex<HashMap<u32, u64>>);

impl Sent {
    /// Counts one more request to `slot`, just before it is sent; returns the slot's count
    /// with it, the request's number on the slot.
    pub fn bump(&self, slot: u32) -> u64 {
        let mut counts = lock(&self.0);
        let n = counts.entry(slot).or_insert(0);
        *n += 1;
        *n
    }
}

/// Whether a request numbered `now` on its slot follows the session's previous request
/// (numbered `previous`) with another request in between: another session's, which may
/// have evicted what the slot held for this one. Counts are taken just before a request is
/// sent, and the server may serve two sessions' requests in another order: another
/// session's request counted just after this one's but served before it is not seen for
/// this request (its loss is unshared), and makes the session's next request shared
/// (docs/decisions.md L25).
pub fn shared(previous: u64, now: u64) -> bool {
    now.saturating_sub(previous) > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_counts_its_own_requests_and_another_in_between_is_shared() {
        let sent = Sent::default();
        let a1 = sent.bump(0);
        let a2 = sent.bump(0);
        assert!(!shared(a1, a2), "the session's own next request");
        // Another slot's requests do not move this one's count.
        assert_eq!(sent.bump(1), 1);
        let other = sent.bump(0);
        let a3 = sent.bump(0);
        assert!(shared(a2, a3), "{other} came between {a2} and {a3}");
        assert!(!shared(other, a3));
    }

    #[test]
    fn a_session_keeps_its_slot() {
        let id = SessionId::new("s-20261201-0123456789abcdef").expect("id");
        assert!(slot_of(&id, 4) < 4);
        assert_eq!(slot_of(&id, 0), 0, "no slots reported: slot 0");
    }
}
