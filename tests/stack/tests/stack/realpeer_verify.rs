//! Real-peer tier: `bxctl verify`'s model checks against llama.cpp's own server
//! (tests/realpeer/serve.py, SmolLM2-135M) behind the real inferproxy and loopd. With the
//! repository's ChatML template with tools, the server is reached through inferproxy, its
//! `/props` read (slots, context, the template's tool support), `/slots*` refused, and the
//! replay of a few turns wastes at most 8 tokens of prefill a request; `--cache-reuse` and
//! `--context-shift` are said not to be reported (`warn`), and still are when the server runs
//! with both on. With SmolLM2's own template, which has no tool support, the tools check
//! fails; with a template that renders earlier answers otherwise than the server cached them
//! (tests/realpeer/chatml-forgetful.jinja), the replay check fails. Ignored under a plain `cargo test`; `tests/gate realpeer` runs it with
//! `BOXMAKER_REALPEER_PYTHON` and `BOXMAKER_REALPEER_MODEL` set.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use stack::{Agent, Home, read_grant};

fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => {
            panic!("{name} is not set: run `tests/gate realpeer` (it runs tests/realpeer/setup.sh)")
        }
    }
}

/// The stack in front of the real server, started with serve.py's `options`, sampling
/// greedily (the same answers every run); answers capped at 48 tokens.
fn real_agent(home: &Home, options: &[&str]) -> Agent {
    let serve = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../realpeer/serve.py");
    let mut cmd = Command::new(env_path("BOXMAKER_REALPEER_PYTHON"));
    cmd.arg(serve)
        .arg("--model")
        .arg(env_path("BOXMAKER_REALPEER_MODEL"))
        .args(["--n-ctx", "4096", "--slots", "2", "--greedy"])
        .args(options)
        // serve.py runs until its stdin closes: the pipe stays open while the child lives.
        .stdin(Stdio::piped());
    let (real, addr) = home.spawn_peer(cmd, "real.log");
    home.agent_on(real, &addr, "max_tokens = 48")
}

fn home(name: &str) -> Home {
    let home = Home::new(name, "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant("notes-read", &read_grant("auto", &notes, ""));
    home
}

fn verify(home: &Home, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["verify", "--json", "--only", "model"];
    all.extend_from_slice(args);
    let out: Output = home.bxctl(&all);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{v:#}\n").as_bytes());
    (out.status.code(), v)
}

fn level(v: &Value, name: &str) -> String {
    v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == name)
        .and_then(|c| c["level"].as_str())
        .unwrap_or_else(|| panic!("no check {name}: {v}"))
        .to_owned()
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn verify_passes_against_llama_cpps_server_and_its_replay_wastes_at_most_8_tokens() {
    let home = home("verify-real");
    let _agent = real_agent(&home, &[]);
    let (code, v) = verify(&home, &[]);
    assert_eq!(code, Some(0), "{v}");
    for (name, want) in [
        ("reach", "ok"),
        ("props", "ok"),
        ("tools", "ok"),
        ("cache-reuse", "warn"),
        ("context-shift", "warn"),
        ("slots", "ok"),
        ("replay", "ok"),
    ] {
        assert_eq!(level(&v, name), want, "{name}: {v}");
    }
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn a_server_without_tool_support_fails_and_cache_reuse_is_never_guessed() {
    let home = home("verify-real-notools");
    let agent = real_agent(&home, &["--model-template"]);
    let (code, v) = verify(&home, &["--no-replay"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(level(&v, "tools"), "fail", "{v}");
    drop(agent);
    // Started with --cache-reuse 256 and --context-shift: /props does not say so, and
    // neither check claims either way.
    let home = self::home("verify-real-loose");
    let _agent = real_agent(&home, &["--cache-reuse", "256", "--context-shift"]);
    let (code, v) = verify(&home, &["--no-replay"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(level(&v, "cache-reuse"), "warn", "{v}");
    assert_eq!(level(&v, "context-shift"), "warn", "{v}");
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn a_template_that_rewrites_earlier_answers_fails_the_replay() {
    let home = home("verify-real-forgetful");
    let template =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../realpeer/chatml-forgetful.jinja");
    let template = template.display().to_string();
    let _agent = real_agent(&home, &["--template", &template]);
    let (code, v) = verify(&home, &[]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(level(&v, "replay"), "fail", "{v}");
}
