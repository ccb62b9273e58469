//! The exit statuses `main` documents, from the real binary: 0 for a good `--check-config`,
//! 1 for a start that failed (the message naming the file involved), 2 for a command line
//! that is not understood.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bx-loopd-exit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// A configuration whose state directory is `home` and whose sockets are in `dir`.
fn config(dir: &Path, home: &Path) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "home = {home:?}\n[sockets]\nloop_broker = {:?}\nadmin_broker = {:?}\n\
         chat_loop = {:?}\nloop_infer = {:?}\n\
         [peers]\nloopd = {{ uid = 1 }}\nadmin = {{ uid = 2 }}\nchat = {{ uid = 3 }}\n",
        dir.join("loop-broker"),
        dir.join("admin-broker"),
        dir.join("chat-loop"),
        dir.join("loop-infer"),
    );
    std::fs::write(&path, text).expect("config");
    path
}

fn loopd(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loopd"))
        .args(args)
        .env_remove("LISTEN_FDS")
        .env_remove("LISTEN_PID")
        .env_remove("NOTIFY_SOCKET")
        .output()
        .expect("loopd")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_good_check_is_0_and_a_missing_config_is_1_naming_it() {
    let dir = dir("config");
    let good = config(&dir, &dir.join("home"));
    let out = loopd(&[
        "--config".as_ref(),
        good.as_os_str(),
        "--check-config".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let missing = dir.join("nowhere.toml");
    let out = loopd(&[
        "--config".as_ref(),
        missing.as_os_str(),
        "--check-config".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let want = format!("loopd: configuration: {}: ", missing.display());
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_store_that_cannot_be_opened_is_1_naming_its_directory() {
    let dir = dir("store");
    // The state directory is a file: `sessions/` cannot be made under it.
    let home = dir.join("home");
    std::fs::write(&home, "not a directory").expect("home");
    let config = config(&dir, &home);
    let out = loopd(&["--config".as_ref(), config.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let want = format!(
        "loopd: session store: {}: ",
        home.join("sessions").display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_option_is_2() {
    let out = loopd(&["--no-such-option".as_ref()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
