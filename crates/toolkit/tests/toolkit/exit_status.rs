//! The binary's exit statuses (its `main.rs` table): 0 whenever it answered, even with
//! `failed`; 2 when stdin cannot be read; 3 when stdout cannot be written.

use std::fs::{File, OpenOptions};
use std::process::{Command, Output, Stdio};

use crate::support::{TempDir, read_file, run};

fn tool(stdin: Stdio, stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_boxmaker-tool"))
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("run boxmaker-tool")
}

#[test]
fn a_failed_tool_is_an_answer_with_status_zero() {
    // `run` asserts the zero status and parses the one answer.
    let t = TempDir::new();
    crate::support::failed(
        run(&read_file(t.s("none"), vec![t.s("")]), None),
        "does not exist",
    );
}

#[test]
fn unreadable_stdin_exits_2_and_says_why() {
    // A directory opens but cannot be read (EISDIR).
    let t = TempDir::new();
    let dir = File::open(&t.0).expect("open the directory");
    let out = tool(Stdio::from(dir), Stdio::piped());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("boxmaker-tool: cannot read stdin: Is a directory"),
        "{stderr}"
    );
}

#[test]
fn unwritable_stdout_exits_3_and_says_why() {
    let full = OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("open /dev/full");
    let out = tool(
        Stdio::from(File::open("/dev/null").expect("null")),
        Stdio::from(full),
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("boxmaker-tool: cannot write the answer to stdout: No space left"),
        "{stderr}"
    );
}
