//! `bxctl dev --session ID` continues a session of an earlier `bxctl dev` in the same state
//! directory (its stack ends with the chat, so this is how a session is resumed there).

use std::process::Command;

use stack::bin;

fn dev(state: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(bin("bxctl"))
        .arg("dev")
        .arg("--state")
        .arg(state)
        .args(args)
        .output()
        .expect("bxctl dev");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn session(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("[session ")?.strip_suffix(']'))
        .unwrap_or_else(|| panic!("no session line: {text}"))
        .to_owned()
}

#[test]
fn dev_session_continues_an_earlier_session() {
    let state = std::env::temp_dir().join(format!("bx-dev-session-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    let first = session(&dev(&state, &["-m", "hello there"]));
    let again = session(&dev(&state, &["--session", &first, "-m", "hello again"]));
    assert_eq!(again, first);
    let log = std::fs::read_to_string(state.join(format!("home/sessions/{first}/0.jsonl")))
        .expect("the session log");
    let users = log
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"user\""))
        .count();
    assert_eq!(users, 2, "{log}");
    let _ = std::fs::remove_dir_all(&state);
}
