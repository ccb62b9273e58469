//! While a turn waits for the model's first token, a spinner with the seconds waited, on
//! standard error and only when both outputs are a terminal (piped output stays plain).
//! It erases its line before anything else is written.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Spinner {
    enabled: bool,
    running: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Spinner {
    /// A spinner that draws only when stdout and stderr are terminals.
    pub fn new() -> Self {
        Self {
            enabled: std::io::stdout().is_terminal() && std::io::stderr().is_terminal(),
            running: None,
        }
    }

    /// Starts drawing (again), counting from now.
    pub fn start(&mut self) {
        if !self.enabled || self.running.is_some() {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("spinner".into())
            .spawn(move || {
                let start = Instant::now();
                let mut err = std::io::stderr();
                for frame in ['|', '/', '-', '\\'].iter().cycle() {
                    if flag.load(Ordering::Acquire) {
                        break;
                    }
                    let _ = write!(
                        err,
                        "\r{frame} waiting for the model: {}s",
                        start.elapsed().as_secs()
                    );
                    let _ = err.flush();
                    std::thread::sleep(Duration::from_millis(100));
                }
                let _ = write!(err, "\r\x1b[K");
                let _ = err.flush();
            });
        // Without a thread there is no spinner, and nothing else changes.
        if let Ok(thread) = thread {
            self.running = Some((stop, thread));
        }
    }

    /// Stops drawing and erases the line; returns once it is erased.
    pub fn stop(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            stop.store(true, Ordering::Release);
            let _ = thread.join();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop();
    }
}
