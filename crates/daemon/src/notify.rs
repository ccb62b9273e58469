//! Readiness, status and the watchdog, to systemd over NOTIFY_SOCKET. Outside systemd
//! (no NOTIFY_SOCKET) every call is a no-op.

use std::time::Duration;

use sd_notify::NotifyState;

/// READY=1: send only once every listener is bound and the role serves.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

pub fn stopping() {
    send(&[NotifyState::Stopping]);
}

/// WATCHDOG=1: call it from the loop that does the work, so a wedged loop is noticed.
pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

/// How often to ping the watchdog (half of WatchdogSec=), when it is on: WATCHDOG_USEC is
/// set, and WATCHDOG_PID is this process (or unset).
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled().map(|d| d / 2)
}

/// When the watchdog is on, a thread that pings it every half period while `alive` says
/// the role's work loop is not stuck. A stuck loop stops the pings and systemd restarts the
/// role. `alive` should take at most a second or so.
pub fn spawn_watchdog(alive: impl Fn() -> bool + Send + 'static) -> std::io::Result<()> {
    let Some(every) = watchdog_interval() else {
        return Ok(());
    };
    std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || {
            loop {
                if alive() {
                    watchdog();
                }
                std::thread::sleep(every);
            }
        })
        .map(drop)
}

fn send(state: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(state)
        && !matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
        )
    {
        crate::log::warn(format_args!("sd_notify: {e}"));
    }
}
