//! `bxctl dev` as an owner drives it, through a real pseudo-terminal (`expectrl`): Ctrl-C
//! during a turn and at the prompt, the terminal's hang-up, SIGKILL of bxctl, a 0xFF byte,
//! two runs on one state directory, the owner's grant edits across restarts. Each run has
//! its own state directory; every role it started is named in its `dev.lock`, and each test
//! checks that none of them outlives bxctl.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use expectrl::process::unix::{Signal as PtySignal, WaitStatus};
use expectrl::session::OsSession as PtySession;
use expectrl::{Expect, Regex};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

const PROMPT: &str = "you> ";

pub fn state_dir(name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "bx-dev-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub fn dev_command(state: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(stack::bin("bxctl"));
    cmd.arg("dev").arg("--state").arg(state).args(extra);
    // The chat's input history is kept per run's state directory, not in the home's.
    cmd.env_remove("BOXMAKER_CONFIG")
        .env("XDG_STATE_HOME", state.join("xdg"))
        .current_dir(std::env::temp_dir());
    cmd
}

/// `bxctl dev` on a terminal of its own (an xterm: the line editor in raw mode, as an
/// owner's terminal has it).
pub fn on_pty(state: &Path, extra: &[&str]) -> PtySession {
    let mut cmd = dev_command(state, extra);
    cmd.env("TERM", "xterm");
    let mut s = PtySession::spawn(cmd).expect("bxctl dev on a pty");
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    s
}

/// `bxctl dev` on a terminal of its own, at its first prompt.
pub fn dev(state: &Path, extra: &[&str]) -> PtySession {
    let mut s = on_pty(state, extra);
    s.expect(PROMPT).expect("the prompt");
    s
}

/// The roles a run started, from its lock file.
pub fn roles(state: &Path) -> Vec<(String, i32)> {
    let text = std::fs::read_to_string(state.join("dev.lock")).expect("dev.lock");
    text.lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("child ")?.split_whitespace();
            Some((w.next()?.to_owned(), w.next()?.parse().ok()?))
        })
        .collect()
}

/// The PID of the bxctl that holds `state`'s lock.
fn holder(state: &Path) -> u32 {
    let text = std::fs::read_to_string(state.join("dev.lock")).expect("dev.lock");
    text.lines()
        .find_map(|l| l.strip_prefix("pid ")?.parse().ok())
        .expect("pid line")
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .map(|i| s[i + 1..].split_whitespace().next() != Some("Z"))
        })
        .unwrap_or(false)
}

/// Asserts that every role of `state`'s run is gone within `within`.
pub fn all_gone(state: &Path, within: Duration) {
    // The model server (the fake llama-server, or llama-server), inferproxy, brokerd, loopd
    // and the indexer.
    roles_gone(state, 5, within);
}

/// Asserts that the `count` roles of `state`'s run are gone within `within`.
pub fn roles_gone(state: &Path, count: usize, within: Duration) {
    let roles = roles(state);
    assert_eq!(roles.len(), count, "{roles:?}");
    let left = stack::poll_until(within, || roles.iter().all(|(_, p)| !alive(*p)));
    let survivors: Vec<_> = roles.iter().filter(|(_, p)| alive(*p)).collect();
    // A failing test leaves nothing running either.
    for (_, pid) in &survivors {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    assert!(left.is_some(), "roles outlived bxctl: {survivors:?}");
}

/// How bxctl ended: its exit code, or `None` if a signal ended it (or it still runs after
/// `within`).
pub fn exit_code(s: &PtySession, within: Duration) -> Option<i32> {
    let status = stack::poll_until(within, || match s.get_process().status() {
        Ok(WaitStatus::StillAlive) | Err(_) => None,
        Ok(other) => Some(other),
    });
    match status {
        Some(WaitStatus::Exited(_, code)) => Some(code),
        _ => None,
    }
}

/// bxctl exits with `code` within 15 s, and every role it started is gone 10 s later.
pub fn ends(s: &PtySession, state: &Path, code: i32) {
    assert_eq!(
        exit_code(s, Duration::from_secs(15)),
        Some(code),
        "bxctl did not end as it should"
    );
    all_gone(state, Duration::from_secs(10));
}

/// `/quit`, and the stack is gone.
pub fn quit(s: &mut PtySession, state: &Path) {
    s.send_line("/quit").expect("quit");
    ends(s, state, 0);
}

#[test]
fn ctrl_c_at_the_prompt_leaves_and_takes_every_role_down() {
    let state = state_dir("ctrlc-prompt");
    let mut s = dev(&state, &[]);
    s.send("\u{3}").expect("ctrl-c");
    ends(&s, &state, 0);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn a_hang_up_of_the_terminal_takes_every_role_down() {
    let state = state_dir("sighup");
    let s = dev(&state, &[]);
    // What the kernel does when the terminal goes away: SIGHUP to the terminal's foreground
    // process group (bxctl's). The roles are in a group of their own: brokerd must not take
    // the hang-up as a grant reload and stay.
    let pty = s.get_process().get_raw_handle().expect("pty");
    let fg = nix::unistd::tcgetpgrp(&pty).expect("foreground group");
    let roles = roles(&state);
    assert!(
        roles
            .iter()
            .all(|(_, p)| nix::unistd::getpgid(Some(Pid::from_raw(*p))).is_ok_and(|g| g != fg)),
        "a role is in the terminal's foreground group: {roles:?}"
    );
    killpg(fg, Signal::SIGHUP).expect("hang-up");
    // Exited by itself (128 + SIGHUP) after stopping its stack, not killed by the signal.
    ends(&s, &state, 129);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn sigterm_to_bxctl_takes_every_role_down() {
    let state = state_dir("sigterm");
    let mut s = dev(&state, &[]);
    s.get_process_mut()
        .signal(PtySignal::SIGTERM)
        .expect("kill");
    ends(&s, &state, 143);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn after_sigkill_of_bxctl_no_role_survives_and_the_next_run_starts_at_once() {
    let state = state_dir("sigkill");
    let mut s = dev(&state, &[]);
    s.get_process_mut()
        .signal(PtySignal::SIGKILL)
        .expect("kill -9");
    let killed = stack::poll_until(Duration::from_secs(5), || {
        matches!(
            s.get_process().status(),
            Ok(WaitStatus::Signaled(_, PtySignal::SIGKILL, _))
        )
    });
    assert!(killed.is_some(), "bxctl was not killed");
    all_gone(&state, Duration::from_secs(10));
    let mut again = dev(&state, &[]);
    again.send_line("What is on my todo list?").expect("send");
    again.expect("buy milk").expect("the stack works again");
    quit(&mut again, &state);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn a_byte_that_is_not_utf8_is_refused_and_the_prompt_stays() {
    let state = state_dir("0xff");
    let mut s = dev(&state, &[]);
    s.send(b"\xff\r").expect("0xFF");
    s.expect("not UTF-8").expect("refused, said so");
    s.expect(PROMPT).expect("the prompt again");
    s.send_line("What is on my todo list?").expect("send");
    s.expect("buy milk").expect("the stack still answers");
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn ctrl_c_during_a_turn_withdraws_its_approval_and_the_session_goes_on() {
    let state = state_dir("ctrlc-turn");
    let mut s = dev(&state, &[]);
    s.send_line("Can you list my notes?").expect("send");
    s.expect("[l] later").expect("the card");
    // Later: the call waits on, and the chat prints the command that answers it.
    s.send("l").expect("later");
    let found = s
        .expect(Regex(r"answer it with `[^`]+approve [0-9a-f]{32}`"))
        .expect("the approval waits");
    let hint = String::from_utf8_lossy(found.get(0).expect("the match")).into_owned();
    let cmd = hint
        .trim_start_matches("answer it with `")
        .trim_end_matches('`')
        .to_owned();
    let (prefix, id) = cmd.rsplit_once("approve ").expect("approve ID");
    // The printed command works as printed: from another directory, without bxctl on PATH.
    let listed = Command::new("sh")
        .args(["-c", &format!("{prefix}approvals")])
        .current_dir("/")
        .env("PATH", "/usr/bin:/bin")
        .env_remove("BOXMAKER_CONFIG")
        .output()
        .expect("sh");
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(id),
        "{listed:?}"
    );
    s.send("\u{3}").expect("ctrl-c");
    s.expect("turn cancelled").expect("cancelled");
    s.expect(PROMPT).expect("the prompt again");
    // Withdrawn at once: no longer waiting, and a later answer is refused.
    let gone = stack::poll_until(Duration::from_secs(2), || {
        let listed = Command::new("sh")
            .args(["-c", &format!("{prefix}approvals")])
            .output()
            .expect("sh");
        listed.status.success() && !String::from_utf8_lossy(&listed.stdout).contains(id)
    });
    assert!(
        gone.is_some(),
        "approval {id} still waits after the turn was cancelled"
    );
    let late = Command::new("sh").args(["-c", &cmd]).output().expect("sh");
    let said = String::from_utf8_lossy(&late.stdout);
    assert!(
        late.status.code() == Some(1)
            && (said.contains("refused: already_used") || said.contains("refused: AlreadyUsed")),
        "{late:?}"
    );
    // Audited as refused.
    let audit = audit_text(&state);
    assert!(
        audit.contains("approval_refused") && audit.contains("loopd withdrew the request"),
        "{audit}"
    );
    // The session goes on, its log whole: the withdrawn call has its result.
    s.send_line("What is on my todo list?").expect("send");
    s.expect("buy milk").expect("the session goes on");
    let log = session_text(&state);
    assert!(
        log.contains("denied by the owner's policy (approval_refused)"),
        "{log}"
    );
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
}

fn audit_text(state: &Path) -> String {
    files_text(&state.join("home/audit"))
}

fn session_text(state: &Path) -> String {
    let mut text = String::new();
    // Each session's directory (not loopd's `.changed`, the indexer's trigger).
    for dir in std::fs::read_dir(state.join("home/sessions"))
        .expect("sessions")
        .flatten()
        .filter(|d| d.path().is_dir())
    {
        text.push_str(&files_text(&dir.path()));
    }
    text
}

fn files_text(dir: &Path) -> String {
    let mut text = String::new();
    for f in std::fs::read_dir(dir).expect("dir").flatten() {
        text.push_str(&std::fs::read_to_string(f.path()).unwrap_or_default());
    }
    text
}

/// Every file under `dir` with its size, modification time and inode.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, i64, i64, u64)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let m = e.path().symlink_metadata().expect("meta");
            if m.is_dir() {
                todo.push(e.path());
            }
            out.push((e.path(), m.len(), m.mtime(), m.mtime_nsec(), m.ino()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_second_run_on_the_same_state_names_the_first_and_changes_nothing() {
    let state = state_dir("twice");
    let mut first = dev(&state, &[]);
    // The first stack settled (a role may still be logging the chat's connection).
    let mut before = snapshot(&state);
    let settled = stack::poll_until(Duration::from_secs(10), || {
        std::thread::sleep(Duration::from_millis(300));
        let now = snapshot(&state);
        let same = now == before;
        before = now;
        same
    });
    assert!(settled.is_some(), "the first stack never settled");
    let second = dev_command(&state, &["-m", "hello"])
        .output()
        .expect("second bxctl dev");
    let err = String::from_utf8_lossy(&second.stderr);
    let pid = holder(&state);
    assert_eq!(second.status.code(), Some(2), "{second:?}");
    assert!(
        err.contains(&format!("another `bxctl dev` (PID {pid})"))
            && err.contains(&format!("kill {pid}")),
        "{err}"
    );
    let after = snapshot(&state);
    let changed: Vec<_> = after.iter().filter(|e| !before.contains(e)).collect();
    let gone: Vec<_> = before.iter().filter(|e| !after.contains(e)).collect();
    assert!(
        changed.is_empty() && gone.is_empty(),
        "the second run changed the state directory: now {changed:?}, before {gone:?}"
    );
    first.send_line("What is on my todo list?").expect("send");
    first
        .expect("buy milk")
        .expect("the first stack still answers");
    quit(&mut first, &state);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn the_owners_grant_edits_survive_a_restart_and_reset_restores_the_samples() {
    let state = state_dir("edits");
    let quit = |extra: &[&str]| {
        let mut s = dev(&state, extra);
        quit(&mut s, &state);
    };
    quit(&[]);
    let grants = state.join("grants");
    let read = grants.join("notes-read.toml");
    let edited = std::fs::read_to_string(&read).expect("sample") + "# the owner's edit\n";
    std::fs::write(&read, &edited).expect("edit");
    std::fs::remove_file(grants.join("web-ask.toml")).expect("delete a sample");
    let log = state.join("logs/brokerd.log");
    let log_before = std::fs::read_to_string(&log).expect("brokerd log");
    quit(&[]);
    assert_eq!(std::fs::read_to_string(&read).expect("kept"), edited);
    assert!(
        !grants.join("web-ask.toml").exists(),
        "a deleted sample came back"
    );
    let log_after = std::fs::read_to_string(&log).expect("brokerd log");
    assert!(
        log_after.starts_with(&log_before),
        "the log was not appended to"
    );
    assert!(log_after.len() > log_before.len());
    quit(&["--reset"]);
    assert!(
        !std::fs::read_to_string(&read)
            .expect("reset")
            .contains("the owner's edit")
    );
    assert!(
        grants.join("web-ask.toml").exists(),
        "--reset restores the samples"
    );
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn script_and_grants_run_the_owners_scenario_through_the_real_command() {
    let state = state_dir("scenario");
    let own = state_dir("scenario-grants");
    std::fs::create_dir_all(&own).expect("grants dir");
    let script = own.with_extension("toml");
    std::fs::write(
        &script,
        "[server]\nloading_ms = 4000\n[default]\ntext = \"the owner's own script answers\"\n",
    )
    .expect("script");
    let out = dev_command(
        &state,
        &[
            "--script",
            &script.display().to_string(),
            "--grants",
            &own.display().to_string(),
            "-m",
            "hello",
        ],
    )
    .output()
    .expect("bxctl dev");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("the owner's own script answers"), "{text}");
    // Ready waits for the model's /health; piped, the wait is said once, plainly.
    assert!(
        text.contains("waiting for the model: loading...\n"),
        "{text}"
    );
    assert!(text.contains("the model is ready after"), "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !text.contains('\r') && !err.contains('\r'),
        "a terminal's redraw (the wait, the spinner) in piped output: {text:?} {err:?}"
    );
    assert!(
        !state.join("grants").exists(),
        "samples written although --grants was given"
    );
    let config = std::fs::read_to_string(state.join("config.toml")).expect("config");
    assert!(
        config.contains(&format!("grants = \"{}\"", own.display())),
        "{config}"
    );
    all_gone(&state, Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&state);
    let _ = std::fs::remove_dir_all(&own);
    let _ = std::fs::remove_file(&script);
}

#[test]
fn a_terminal_shows_the_wait_for_the_model_and_a_spinner_for_the_first_token() {
    let state = state_dir("spinner");
    let script = state.with_extension("toml");
    std::fs::write(
        &script,
        "[server]\nloading_ms = 4000\n[default]\ntext = \"slow answer\"\ndelay_ms = 1500\n",
    )
    .expect("script");
    let mut s = on_pty(&state, &["--script", &script.display().to_string()]);
    s.expect(Regex(r"waiting for the model: loading\.\.\. [1-9]s"))
        .expect("the wait, with the seconds waited");
    s.expect(PROMPT).expect("the prompt");
    s.send_line("hello").expect("send");
    s.expect(Regex(r"waiting for the model: [1-9]s"))
        .expect("the spinner counts the seconds");
    s.expect("slow answer").expect("the answer");
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
    let _ = std::fs::remove_file(&script);
}
