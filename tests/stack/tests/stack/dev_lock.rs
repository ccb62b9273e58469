//! `bxctl dev`'s lock file as the fallback that stops what an earlier run left.

use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::dev::{dev, quit, state_dir};

/// The lock's fallback: a role left running by an earlier run (here: one that ignores the
/// parent's death, as a stuck role would) is stopped by the next run before it starts.
#[test]
fn a_role_an_earlier_run_left_is_stopped_through_the_lock() {
    let state = state_dir("leftover");
    std::fs::create_dir_all(&state).expect("state");
    let mut sleeper = Command::new("sleep").arg("600").spawn().expect("sleep");
    let pid = i32::try_from(sleeper.id()).expect("pid");
    let start = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let start = start[start.rfind(')').expect(")") + 1..]
        .split_whitespace()
        .nth(19)
        .expect("starttime")
        .to_owned();
    std::fs::write(
        state.join("dev.lock"),
        format!("pid 1\nchild brokerd {pid} {start}\n"),
    )
    .expect("a lock an earlier run left");
    let mut s = dev(&state, &[]);
    let stopped = stack::poll_until(Duration::from_secs(2), || {
        sleeper.try_wait().ok().flatten().is_some()
    });
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    let _ = sleeper.wait();
    assert!(stopped.is_some(), "the leftover still ran");
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
}
