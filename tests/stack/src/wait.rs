//! Polling with a deadline: the one loop every "until this shows" wait of the harness and
//! the tests uses.

use std::time::{Duration, Instant};

/// What a [`wait_until`] probe answers: `true`, or `Some(value)`, once the wait is over.
pub trait Ready {
    type Value;
    fn ready(self) -> Option<Self::Value>;
}

impl Ready for bool {
    type Value = ();
    fn ready(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Ready for Option<T> {
    type Value = T;
    fn ready(self) -> Option<T> {
        self
    }
}

/// Asks `probe` every 20 ms until it is ready and returns its value; `None` once `timeout`
/// has passed.
pub fn poll_until<R: Ready>(timeout: Duration, mut probe: impl FnMut() -> R) -> Option<R::Value> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe().ready() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`poll_until`], failing the test (naming `what` it waited for) once `timeout` has passed.
pub fn wait_until<R: Ready>(what: &str, timeout: Duration, probe: impl FnMut() -> R) -> R::Value {
    poll_until(timeout, probe).unwrap_or_else(|| panic!("not within {timeout:?}: {what}"))
}
