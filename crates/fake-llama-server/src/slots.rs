//! Server slots: each keeps the tokens its last request left in the (simulated) KV cache.
//!
//! A request pinned with `id_slot` waits for that slot; an unpinned one takes the idle slot
//! whose cached text shares the longest prefix with its prompt (if that is over a tenth of the
//! prompt), else the least recently used idle slot, and waits when every slot is busy
//! (llama-server defers the task the same way).
//! An `id_slot` outside `0..total_slots` is ignored, as xllamacpp's build of the server does.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::tokens;

/// What one slot holds.
#[derive(Debug, Clone, Default)]
struct Slot {
    cache: Vec<String>,
    busy: bool,
    last_used: u64,
    view: SlotView,
}

/// A slot as `/slots` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotView {
    /// Serving a request right now.
    pub busy: bool,
    /// The last task it served (`None`: never used).
    pub id_task: Option<u64>,
    /// Prompt tokens of the last task.
    pub n_prompt_tokens: usize,
    /// Prompt tokens evaluated (not from the cache) by the last task.
    pub n_prompt_processed: usize,
    /// Prompt tokens taken from the cache by the last task.
    pub n_prompt_cache: usize,
    /// The last task's `max_tokens` (-1: unlimited).
    pub n_predict: i64,
}

/// All slots.
#[derive(Debug)]
pub struct Slots {
    inner: Mutex<(Vec<Slot>, u64)>,
    freed: Condvar,
}

/// A slot held by one request; released (and other waiters woken) when dropped.
#[derive(Debug)]
pub struct SlotGuard<'a> {
    slots: &'a Slots,
    /// The slot's index.
    pub id: usize,
    /// The tokens cached in the slot before this request.
    pub previous: Vec<String>,
}

impl Slots {
    /// `n` empty slots.
    pub fn new(n: usize) -> Self {
        Self {
            inner: Mutex::new((vec![Slot::default(); n], 0)),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (Vec<Slot>, u64)> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes a slot for a request whose prompt has the tokens `prompt`, waiting while the
    /// wanted one (or every one) is busy.
    pub fn acquire(&self, pinned: Option<i64>, prompt: &[&str]) -> SlotGuard<'_> {
        let mut guard = self.lock();
        loop {
            let slots = &guard.0;
            let pinned = pinned
                .and_then(|p| usize::try_from(p).ok())
                .filter(|&p| p < slots.len());
            let choice = match pinned {
                Some(id) => (!slots[id].busy).then_some(id),
                None => best_idle(slots, prompt),
            };
            if let Some(id) = choice {
                let (slots, clock) = &mut *guard;
                *clock += 1;
                let slot = &mut slots[id];
                slot.busy = true;
                slot.view.busy = true;
                slot.last_used = *clock;
                return SlotGuard {
                    slots: self,
                    id,
                    previous: slot.cache.clone(),
                };
            }
            guard = self
                .freed
                .wait(guard)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// A snapshot for `/slots`.
    pub fn views(&self) -> Vec<SlotView> {
        self.lock().0.iter().map(|s| s.view.clone()).collect()
    }

    /// Empties slot `id`'s cache; returns how many tokens it held, `None` for no such slot.
    pub fn erase(&self, id: usize) -> Option<usize> {
        let mut guard = self.lock();
        let slot = guard.0.get_mut(id)?;
        let held = slot.cache.len();
        slot.cache.clear();
        Some(held)
    }
}

/// The idle slot for an unpinned prompt: the one sharing the longest prefix with it when that
/// is more than a tenth of the prompt (llama-server's default `slot_prompt_similarity`), else
/// the least recently used one (the lowest id among equals).
fn best_idle(slots: &[Slot], prompt: &[&str]) -> Option<usize> {
    let idle = || slots.iter().enumerate().filter(|(_, s)| !s.busy);
    let prompt_tokens = prompt.len().max(1);
    let (similar, shared) = idle()
        .map(|(id, s)| (id, tokens::common_prefix(&s.cache, prompt)))
        .fold(
            (None, 0),
            |best, (id, n)| if n > best.1 { (Some(id), n) } else { best },
        );
    if similar.is_some() && shared * 10 > prompt_tokens {
        return similar;
    }
    idle()
        .min_by_key(|(id, s)| (s.last_used, *id))
        .map(|(id, _)| id)
}

impl SlotGuard<'_> {
    /// Records what the request left in the slot: `cache` is the new cached tokens.
    pub fn record(&self, cache: Vec<String>, view: SlotView) {
        let mut guard = self.slots.lock();
        let slot = &mut guard.0[self.id];
        slot.cache = cache;
        slot.view = SlotView { busy: true, ..view };
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        let mut guard = self.slots.lock();
        let slot = &mut guard.0[self.id];
        slot.busy = false;
        slot.view.busy = false;
        drop(guard);
        self.slots.freed.notify_all();
    }
}
