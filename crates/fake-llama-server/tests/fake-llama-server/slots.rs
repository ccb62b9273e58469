//! Slots (`slots`): pinning, the best prefix, waiting for a busy slot.

use std::sync::Arc;
use std::time::Duration;

use fake_llama_server::slots::{SlotView, Slots};
use fake_llama_server::tokens::{owned, tokenize};

#[test]
fn pinned_requests_get_their_slot_and_others_the_best_prefix() {
    let slots = Slots::new(2);
    {
        let g = slots.acquire(Some(1), &tokenize("abcdefgh"));
        assert_eq!(g.id, 1);
        g.record(owned("abcdefgh-reply"), SlotView::default());
    }
    // Unpinned: slot 1 shares a prefix with the prompt.
    let g = slots.acquire(None, &tokenize("abcdefgh-reply and more"));
    assert_eq!(
        (g.id, g.previous.concat()),
        (1, "abcdefgh-reply".to_owned())
    );
    drop(g);
    // Out of range: ignored, any idle slot.
    let g = slots.acquire(Some(9), &tokenize("zzzz"));
    assert_eq!(g.id, 0);
    drop(g);
    assert_eq!(slots.erase(1), Some(4));
    assert_eq!(slots.erase(2), None);
}

#[test]
fn a_busy_pinned_slot_makes_the_next_request_wait() {
    let slots = Arc::new(Slots::new(2));
    let first = slots.acquire(Some(0), &["p"]);
    let waiter = {
        let slots = Arc::clone(&slots);
        std::thread::spawn(move || slots.acquire(Some(0), &["p"]).id)
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(!waiter.is_finished(), "must wait while slot 0 is busy");
    assert!(slots.views()[0].busy);
    drop(first);
    assert_eq!(waiter.join().expect("waiter"), 0);
}
