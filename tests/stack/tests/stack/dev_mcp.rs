//! docs/mcp.md's "In `bxctl dev`" as a newcomer follows it, on a real `bxctl dev`: a
//! server in `.state/mcp.toml` (bxctl adds it to the configuration it writes), `bxctl mcp
//! pin time` answered `y` in another terminal, the grant in `.state/grants/time.toml`,
//! `bxctl grants reload`, and the question; the model's call of the pinned tool runs and
//! its answer comes back. The server is the scripted stand-in shaped as mcp-server-time
//! (the real one: tests/stack/tests/stack/mcp_realpeer.rs).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use expectrl::Expect;
use serde_json::json;
use stack::mcp::starts;

use crate::dev::{dev, quit, state_dir};

/// bxctl as the second terminal runs it (`bxctl dev` prints the hint), `input` on stdin.
fn bxctl(state: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(stack::bin("bxctl"))
        .args(args)
        .env("BOXMAKER_CONFIG", state.join("config.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bxctl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("answer");
    child.wait_with_output().expect("bxctl")
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const MODEL: &str = r#"
[[rule]]
[rule.match]
tool_result_contains = "2026-12-02T09:00:00+09:00"
[rule.answer]
text = "In Tokyo it is 09:00."

[[rule]]
[rule.match]
user_contains = "Tokyo"
[[rule.answer.tool_calls]]
name = "mcp__time__get_current_time"
arguments = '{"timezone":"Asia/Tokyo"}'

[default]
text = "hello"
"#;

#[test]
fn a_server_in_mcp_toml_is_pinned_granted_and_called_under_bxctl_dev() {
    let state = state_dir("mcp");
    std::fs::create_dir_all(&state).expect("state");
    let model = state.with_extension("toml");
    std::fs::write(&model, MODEL).expect("model script");
    let log = state.with_extension("mcp.log");
    let server = state.with_extension("mcp.json");
    std::fs::write(
        &server,
        json!({"server_info": {"name": "mcp-time", "version": "2026.10.19"},
               "log_file": log,
               "tools": [{"name": "get_current_time",
                          "description": "Get current time in a specific timezone",
                          "inputSchema": {"type": "object",
                                          "properties": {"timezone": {"type": "string"}},
                                          "required": ["timezone"]},
                          "result": {"content": [{"text":
                              "{\"timezone\":\"Asia/Tokyo\",\"datetime\":\"2026-12-02T09:00:00+09:00\"}"}]}}]})
        .to_string(),
    )
    .expect("server script");
    std::fs::write(
        state.join("mcp.toml"),
        format!(
            "[[mcp]]\nname = \"time\"\ncommand = [{:?}, {:?}]\n",
            stack::bin("fake-mcp-server").display().to_string(),
            server.display().to_string()
        ),
    )
    .expect("mcp.toml");
    let mut s = dev(&state, &["--script", &model.display().to_string()]);

    let out = bxctl(&state, &["mcp", "pin", "time"], "y\n");
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("server time: mcp-time 2026.10.19"), "{text}");
    assert!(text.contains("tool mcp__time__get_current_time"), "{text}");
    assert!(text.contains("pin these 1 tools"), "{text}");
    assert!(text.contains("pinned time: "), "{text}");
    assert_eq!(starts(&log), 1, "the probe started it once");
    std::fs::write(
        state.join("grants/time.toml"),
        "tool = \"mcp:time/*\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
         result_class = \"public\"\nuntrusted = false\n",
    )
    .expect("grant");
    let out = bxctl(&state, &["grants", "reload"], "");
    assert!(out.status.success(), "{}", said(&out));

    s.send_line("what time is it in Tokyo?").expect("send");
    s.expect("In Tokyo it is 09:00.")
        .expect("the model answered from the server's result");
    assert_eq!(starts(&log), 2, "the call started it once more");
    let listed = said(&bxctl(&state, &["mcp", "list"], ""));
    assert!(listed.contains("time  pinned"), "{listed}");
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
    for f in [model, log, server] {
        let _ = std::fs::remove_file(f);
    }
}
