//! The one start-up every role runs, in the order systemd needs: the inherited sockets
//! taken before any thread exists (by name, or bound here outside socket activation), every
//! listener bound before anything is served, the accept and work threads started, the
//! watchdog fed while the role's work can go on, READY=1 only then; SIGHUP reloads where the
//! role has something to reload, SIGTERM stops accepting and drains the requests in flight.
//! What differs between roles is what they hand the builder: their sockets with handler and
//! refusal, their own threads, the liveness check, the reload, the drain time and what runs
//! around the drain. No thread of a role exits the process: it stops the role through
//! [`Halt`], and `run` returns the error for `main`.

use std::fmt;
use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

use crate::accept::{self, Activity, Admission, Refuse};
use crate::conn::Conn;
use crate::listen::{Inherited, ListenError};
use crate::serve::{self, Policy};
use crate::{lock, log, notify};

type Task = Box<dyn FnOnce() + Send>;

/// A role being started: see the module's comment for the order [`Service::run`] keeps.
pub struct Service {
    role: &'static str,
    inherited: Inherited,
    activity: Arc<Activity>,
    /// Each socket's name and its accept loop, ready to run.
    sockets: Vec<(&'static str, Task)>,
    threads: Vec<(&'static str, Task)>,
    alive: Option<Box<dyn Fn() -> bool + Send>>,
    reload: Option<Box<dyn FnMut()>>,
    drain: Duration,
    before_drain: Option<Box<dyn FnOnce()>>,
    after_drain: Option<Box<dyn FnOnce()>>,
    halt: Halt,
}

/// Why a role could not start serving. Each text prints what it wraps, which `source()`
/// does not return (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot watch signals: {0}")]
    Signals(io::Error),
    #[error("cannot start a thread ({name}): {error}")]
    Thread { name: String, error: io::Error },
    /// A thread of the role stopped it through its [`Halt`]: `by` says which (a socket's
    /// connection, a thread's name, the reload), `error` is the role's own error.
    #[error("stopped by {by}: {error}")]
    Halted {
        by: String,
        error: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sockets: Vec<&str> = self.sockets.iter().map(|(n, _)| *n).collect();
        f.debug_struct("Service")
            .field("role", &self.role)
            .field("sockets", &sockets)
            .field("drain", &self.drain)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// `inherited` is what systemd passed, taken (`Inherited::from_env`) before any thread
    /// started. The drain time is zero until [`Service::drain`] sets it.
    pub fn new(role: &'static str, inherited: Inherited) -> Self {
        Self {
            role,
            inherited,
            halt: Halt(Arc::new(HaltState {
                why: Mutex::new(None),
                wake: OnceLock::new(),
            })),
            activity: Arc::new(Activity::default()),
            sockets: Vec::new(),
            threads: Vec::new(),
            alive: None,
            reload: None,
            drain: Duration::ZERO,
            before_drain: None,
            after_drain: None,
        }
    }

    /// The handle by which the role's threads (and its reload) stop the process with an
    /// error: see [`Halt`].
    pub fn halt(&self) -> Halt {
        self.halt.clone()
    }

    /// The requests in flight and the stopping flag, for handlers that count their requests
    /// (`serve::requests`) so the drain waits for them.
    pub fn activity(&self) -> Arc<Activity> {
        self.activity.clone()
    }

    /// A framed socket named `policy.name` (its FileDescriptorName=), at `path` outside
    /// socket activation: peers and the cap as the policy says, framed refusals, and
    /// `handle` for each admitted connection with the policy's deadlines.
    pub fn framed(
        &mut self,
        path: &Path,
        policy: &Policy,
        handle: impl Fn(Conn, &str) + Send + Sync + 'static,
    ) -> Result<(), ListenError> {
        let (policy, handle) = (policy.clone(), Arc::new(handle));
        self.listen(policy.name, path, move |listener, activity| {
            serve::accept_loop(listener, policy, activity, handle);
        })
    }

    /// A socket named `admission.name` whose refusals `refuse` writes, and whose admitted
    /// connections go to `handle`.
    pub fn socket(
        &mut self,
        path: &Path,
        admission: Admission,
        refuse: impl Refuse,
        handle: impl Fn(UnixStream, &str) + Send + Sync + 'static,
    ) -> Result<(), ListenError> {
        let handle = Arc::new(handle);
        self.listen(admission.name, path, move |listener, activity| {
            accept::accept_loop(&listener, &admission, &activity, &refuse, &handle);
        })
    }

    /// Binds the socket `name` (or takes it from systemd) now; `serve` runs on its accept
    /// thread once [`Service::run`] starts.
    fn listen(
        &mut self,
        name: &'static str,
        path: &Path,
        serve: impl FnOnce(UnixListener, Arc<Activity>) + Send + 'static,
    ) -> Result<(), ListenError> {
        let listener = self.inherited.take_or_bind(name, path)?;
        let activity = self.activity.clone();
        self.sockets
            .push((name, Box::new(move || serve(listener, activity))));
        Ok(())
    }

    /// A thread of the role's own (brokerd's gateway link, gatewayd's follower), started
    /// after the sockets' and before READY=1.
    pub fn thread(&mut self, name: &'static str, f: impl FnOnce() + Send + 'static) {
        self.threads.push((name, Box::new(f)));
    }

    /// What the watchdog asks before each ping, besides that every accept thread lives:
    /// whether the role's work can go on (docs/decisions.md F12). At most a second or so.
    pub fn watchdog(&mut self, alive: impl Fn() -> bool + Send + 'static) {
        self.alive = Some(Box::new(alive));
    }

    /// What SIGHUP does; a role without it does not catch SIGHUP.
    pub fn reload(&mut self, reload: impl FnMut() + 'static) {
        self.reload = Some(Box::new(reload));
    }

    /// How long SIGTERM waits for requests in flight, once new connections are refused.
    pub fn drain(&mut self, drain: Duration) {
        self.drain = drain;
    }

    /// What runs on SIGTERM before the drain, and after it.
    pub fn around_drain(
        &mut self,
        before: impl FnOnce() + 'static,
        after: impl FnOnce() + 'static,
    ) {
        self.before_drain = Some(Box::new(before));
        self.after_drain = Some(Box::new(after));
    }

    /// Serves until SIGTERM or SIGINT, then drains and returns. `status` is the STATUS= sent
    /// with READY=1.
    pub fn run(mut self, status: &str) -> Result<(), StartError> {
        let names: Vec<&str> = self.sockets.iter().map(|(n, _)| *n).collect();
        let what = match names.as_slice() {
            [one] => format!("socket {one}"),
            many => format!("sockets {}", many.join(" and ")),
        };
        if self.inherited.activated() {
            log::info(format_args!(
                "{what} taken from systemd (socket activation)"
            ));
        } else {
            log::info(format_args!(
                "{what} bound by {} (no socket activation)",
                self.role
            ));
        }
        let mut watched = vec![SIGTERM, SIGINT];
        if self.reload.is_some() {
            watched.push(SIGHUP);
        }
        let mut signals = Signals::new(watched).map_err(StartError::Signals)?;
        // Set before any thread starts, so every halt wakes the loop below.
        let _ = self.halt.0.wake.set(signals.handle());
        let mut accepting = Vec::new();
        for (name, task) in self.sockets {
            accepting.push(spawn(&format!("{name}-accept"), task)?);
        }
        for (name, task) in self.threads {
            spawn(name, task)?;
        }
        let alive = self.alive.take();
        let ended = AtomicBool::new(false);
        notify::spawn_watchdog(move || {
            if accepting.iter().any(std::thread::JoinHandle::is_finished) {
                if !ended.swap(true, Ordering::SeqCst) {
                    log::error(format_args!(
                        "an accept thread ended; no more watchdog pings"
                    ));
                }
                return false;
            }
            alive.as_ref().is_none_or(|alive| alive())
        })
        .map_err(|error| StartError::Thread {
            name: "watchdog".into(),
            error,
        })?;
        log::info(format_args!("{status}"));
        notify::ready(status);

        for signal in signals.forever() {
            if signal == SIGHUP
                && let Some(reload) = self.reload.as_mut()
            {
                reload();
                continue;
            }
            if self.drain.is_zero() {
                log::info(format_args!(
                    "signal {signal}: stopping; requests in flight are cut"
                ));
            } else {
                log::info(format_args!(
                    "signal {signal}: stopping; waiting up to {:?} for requests in flight",
                    self.drain
                ));
            }
            break;
        }
        self.halt.halted()?;
        notify::stopping();
        if let Some(before) = self.before_drain {
            before();
        }
        self.activity.drain(self.drain);
        if let Some(after) = self.after_drain {
            after();
        }
        // A halt during the drain still ends the role with its error.
        self.halt.halted()
    }
}

/// How a role's thread stops the whole process with an error, rather than exiting it
/// itself: brokerd's request threads when the audit log or the session state can no longer
/// be written (docs/decisions.md B10). The first halt wins: [`Service::run`] wakes and
/// returns [`StartError::Halted`] without a drain (or after it, when the halt came during
/// one), for `main` to map to the role's exit code.
#[derive(Clone)]
pub struct Halt(Arc<HaltState>);

struct HaltState {
    why: Mutex<Option<(String, Box<dyn std::error::Error + Send + Sync>)>>,
    wake: OnceLock<Handle>,
}

impl fmt::Debug for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Halt").finish_non_exhaustive()
    }
}

impl Halt {
    /// Stops the process with `error`; `by` names who, for the message (brokerd: `a request
    /// on the loop socket`, `the gateway link`, `the grants reload`).
    pub fn stop(&self, by: &str, error: impl Into<Box<dyn std::error::Error + Send + Sync>>) {
        let mut why = lock(&self.0.why);
        if why.is_none() {
            *why = Some((by.to_owned(), error.into()));
        }
        drop(why);
        if let Some(wake) = self.0.wake.get() {
            wake.close();
        }
    }

    /// The error of the first halt, if there was one.
    fn halted(&self) -> Result<(), StartError> {
        match lock(&self.0.why).take() {
            // Nothing more may be answered: the role's `main` exits with it.
            Some((by, error)) => Err(StartError::Halted { by, error }),
            None => Ok(()),
        }
    }
}

fn spawn(name: &str, task: Task) -> Result<std::thread::JoinHandle<()>, StartError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(task)
        .map_err(|error| StartError::Thread {
            name: name.into(),
            error,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_halt_is_the_one_returned() {
        let service = Service::new("test", Inherited::default());
        let halt = service.halt();
        halt.stop("the first", io::Error::other("first"));
        halt.stop("the second", io::Error::other("second"));
        match service.halt.halted() {
            Err(StartError::Halted { by, error }) => {
                assert_eq!(
                    (by.as_str(), error.to_string().as_str()),
                    ("the first", "first")
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(service.halt.halted().is_ok(), "taken once");
    }
}
