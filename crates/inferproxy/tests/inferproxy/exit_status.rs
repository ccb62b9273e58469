//! The exit statuses `main` documents, from the real binary: 0 for a good `--check-config`,
//! 1 for a start that failed (the message naming the file involved), 2 for a command line
//! that is not understood.

use std::process::{Command, Output};

use crate::support::{TempDir, config};

fn inferproxy(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_inferproxy"))
        .args(args)
        .env_remove("LISTEN_FDS")
        .env_remove("LISTEN_PID")
        .env_remove("NOTIFY_SOCKET")
        .output()
        .expect("inferproxy")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_good_check_is_0_and_a_missing_config_is_1_naming_it() {
    let dir = TempDir::new("exit-config");
    let good = config(&dir, dir.uid(), "http://127.0.0.1:8080", "");
    let out = inferproxy(&[
        "--config".as_ref(),
        good.as_os_str(),
        "--check-config".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let missing = dir.0.join("nowhere.toml");
    let out = inferproxy(&[
        "--config".as_ref(),
        missing.as_os_str(),
        "--check-config".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let want = format!("inferproxy: configuration: {}: ", missing.display());
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
}

#[test]
fn a_file_in_the_sockets_place_is_1_naming_it() {
    let dir = TempDir::new("exit-sock");
    let config = config(&dir, dir.uid(), "http://127.0.0.1:8080", "");
    let sock = dir.0.join("loop-infer/infer.sock");
    std::fs::write(&sock, "not a socket").expect("file");
    let out = inferproxy(&["--config".as_ref(), config.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let want = format!(
        "inferproxy: infer.sock: {} exists and is not a socket",
        sock.display()
    );
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    assert_eq!(std::fs::read(&sock).expect("kept"), b"not a socket");
}

#[test]
fn an_unknown_option_is_2() {
    let out = inferproxy(&["--no-such-option".as_ref()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
