//! How the server is stopped: at the deadline, when deaf to its stdin's end or to SIGTERM,
//! and when it stops reading.

use std::path::Path;
use std::time::Duration;

use proto::mcp::{McpCallOutput, McpFailure, McpPinOutput};

use super::{TOOLS, call_with, failure, invocation, log, pin, pinned_hash, server};
use crate::support::TempDir;

#[test]
fn a_slow_server_is_cut_at_the_deadline_and_stopped() {
    let dir = TempDir::new();
    let server = server(&dir, TOOLS);
    let mut inv = invocation(&server, "slow", "{}", pinned_hash(&server));
    inv.timeout_ms = 800;
    let (out, took) = call_with(&inv, None);
    assert_eq!(failure(&out).0, &McpFailure::Timeout);
    // The deadline, then stdin's end (the fake sleeps on), then SIGTERM.
    assert!(
        took < Duration::from_millis(800) + mcp_stop() * 2,
        "{took:?}"
    );
    assert_gone(&dir);
}

fn mcp_stop() -> Duration {
    toolkit::mcp_session::STOP_WAIT + Duration::from_secs(1)
}

/// The fake's process (its pid is the log's first line) is gone, not even a zombie.
fn assert_gone(dir: &TempDir) {
    let first = log(dir).first().cloned().expect("the fake logged its pid");
    let pid = first.strip_prefix("pid ").expect("pid line");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the server {pid} outlived the call"
    );
}

#[test]
fn a_server_deaf_to_stdins_end_and_sigterm_is_killed() {
    for (extra, least) in [
        (
            r#""ignore_stdin_close": true,"#,
            toolkit::mcp_session::STOP_WAIT,
        ),
        (
            r#""ignore_stdin_close": true, "ignore_sigterm": true,"#,
            toolkit::mcp_session::STOP_WAIT * 2,
        ),
    ] {
        let dir = TempDir::new();
        let script = format!(
            r#"{{{extra} "log_file": "LOG", "tools": [{{"name": "t", "result": {{"content": [{{"text": "ok"}}]}}}}]}}"#
        );
        let server = server(&dir, &script);
        let pin = pinned_hash(&server);
        let _ = std::fs::remove_file(dir.path("log"));
        let (out, took) = call_with(&invocation(&server, "t", "{}", pin), None);
        assert!(matches!(out, McpCallOutput::Ok { .. }), "{out:?}");
        assert!(
            took >= least && took < least + Duration::from_secs(2),
            "{extra}: {took:?}"
        );
        assert_gone(&dir);
    }
}

#[test]
fn a_server_that_stops_reading_is_killed_by_the_watchdog() {
    let dir = TempDir::new();
    let script =
        r#"{"log_file": "LOG", "on_listed": [{"sleep_ms": 20000}], "tools": [{"name": "t"}]}"#;
    let server = server(&dir, script);
    let pin = match pin(&server) {
        McpPinOutput::Ok { hash, .. } => hash,
        other => panic!("{other:?}"),
    };
    // After listing, the fake sleeps and reads nothing: arguments larger than a pipe's
    // buffer block the call's write, which no read deadline can end.
    let big = format!(r#"{{"x":"{}"}}"#, "a".repeat(300 * 1024));
    let mut inv = invocation(&server, "t", &big, pin);
    inv.timeout_ms = 800;
    let (out, took) = call_with(&inv, None);
    assert_eq!(failure(&out).0, &McpFailure::Closed, "{out:?}");
    assert!(
        took < Duration::from_millis(800)
            + toolkit::mcp_session::WATCHDOG_GRACE
            + Duration::from_secs(2),
        "{took:?}"
    );
    assert_gone(&dir);
}
