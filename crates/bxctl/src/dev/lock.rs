//! One stack per state directory: `bxctl dev` takes `dev.lock` (an advisory lock the kernel
//! drops when bxctl dies, however it dies) before it touches anything else there. The file
//! names bxctl's PID, for the run that finds it taken, and each role it started with that
//! process's start time, so a later run can stop what an earlier one left (a role that
//! outlived a SIGKILLed bxctl while it drained) without ever signalling a recycled PID.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::error::DevError;

/// How long a leftover role is given to stop on SIGTERM before SIGKILL.
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct StateLock {
    file: File,
    path: PathBuf,
    text: String,
}

impl StateLock {
    /// Takes the lock of `state` (created if missing, nothing else is), or says who holds
    /// it. Roles an earlier run left behind are stopped first.
    pub fn take(state: &Path) -> Result<Self, DevError> {
        let path = state.join("dev.lock");
        let io = |source| DevError::Write {
            path: path.clone(),
            error: source,
        };
        std::fs::create_dir_all(state).map_err(io)?;
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let mut before = String::new();
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let _ = file.read_to_string(&mut before);
                return Err(DevError::Locked {
                    path,
                    pid: holder(&before),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.read_to_string(&mut before).map_err(io)?;
        stop_leftovers(&before);
        let mut lock = Self {
            file,
            path,
            text: format!("pid {}\n", std::process::id()),
        };
        lock.save()?;
        Ok(lock)
    }

    /// Records a started role, for a later run to stop should it outlive this one.
    pub fn record(&mut self, name: &str, pid: u32) -> Result<(), DevError> {
        if let Some(start) = start_time(pid) {
            self.text.push_str(&format!("child {name} {pid} {start}\n"));
        }
        self.save()
    }

    fn save(&mut self) -> Result<(), DevError> {
        let io = |source| DevError::Write {
            path: self.path.clone(),
            error: source,
        };
        self.file.set_len(0).map_err(io)?;
        self.file.rewind().map_err(io)?;
        self.file.write_all(self.text.as_bytes()).map_err(io)
    }
}

/// The PID the lock file names, if it names one.
fn holder(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse().ok())
}

/// A running process's start time (clock ticks since boot, field 22 of `/proc/PID/stat`):
/// with the PID it names one process for the life of the system. `None` for a process
/// gone, or dead and not yet reaped (a zombie).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    if rest.next()? == "Z" {
        return None;
    }
    rest.nth(18)?.parse().ok()
}

/// Stops every recorded role that still runs as the same process: SIGTERM, then SIGKILL
/// after [`LEFTOVER_GRACE`].
fn stop_leftovers(text: &str) {
    let alive = |pid: u32, start: u64| start_time(pid) == Some(start);
    let left: Vec<(u32, u64)> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("child ")?.split_whitespace();
            let _name = w.next()?;
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .filter(|&(pid, start)| alive(pid, start))
        .collect();
    let signal = |sig| {
        for &(pid, start) in &left {
            if alive(pid, start)
                && let Ok(pid) = i32::try_from(pid)
            {
                let _ = kill(Pid::from_raw(pid), sig);
            }
        }
    };
    signal(Signal::SIGTERM);
    let deadline = Instant::now() + LEFTOVER_GRACE;
    while left.iter().any(|&(p, s)| alive(p, s)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(Signal::SIGKILL);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_start_time_of_this_process_is_read_and_a_gone_one_has_none() {
        assert!(super::start_time(std::process::id()).is_some());
        assert_eq!(super::start_time(u32::MAX), None);
        assert_eq!(super::holder("pid 42\nchild brokerd 7 9\n"), Some(42));
    }
}
