//! One lock per key (a session), made when first needed and forgotten once nobody holds or
//! waits for it, so the map does not grow with every key ever seen.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use crate::lock;

#[derive(Debug)]
pub struct KeyedLocks<K> {
    locks: Mutex<HashMap<K, Arc<Mutex<()>>>>,
}

impl<K> Default for KeyedLocks<K> {
    fn default() -> Self {
        Self {
            locks: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone> KeyedLocks<K> {
    /// Runs `f` holding `key`'s lock: calls for one key run one at a time.
    pub fn run<R>(&self, key: &K, f: impl FnOnce() -> R) -> R {
        let held = lock(&self.locks).entry(key.clone()).or_default().clone();
        let result = {
            let _guard = lock(&held);
            f()
        };
        let mut locks = lock(&self.locks);
        // The map's reference and ours: nobody else holds or waits.
        if Arc::strong_count(&held) == 2 {
            locks.remove(key);
        }
        result
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        lock(&self.locks).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_forgotten_once_nobody_holds_it_and_one_key_runs_alone() {
        let locks = Arc::new(KeyedLocks::<u32>::default());
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (locks, inside) = (locks.clone(), inside.clone());
                std::thread::spawn(move || {
                    locks.run(&7, || {
                        let n = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(n, 0, "one at a time");
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    });
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert!(locks.is_empty());
    }
}
