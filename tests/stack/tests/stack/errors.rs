//! Errors say what happened (issue 28 point 3): each with its cause and a `help:` line,
//! each checked here with its exact message, through the real `bxctl dev`.

use std::path::Path;
use std::process::{Command, Output};

use crate::dev::{dev, dev_command, quit, state_dir};

fn run(state: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out: Output = dev_command(state, args).output().expect("bxctl dev");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_script_the_fake_refuses_is_shown_with_its_cause() {
    let state = state_dir("bad-script");
    let script = state.with_extension("toml");
    std::fs::write(&script, "[server]\nn_ctxx = 4096\n").expect("script");
    let (code, _, err) = run(
        &state,
        &["--script", &script.display().to_string(), "-m", "hi"],
    );
    assert_eq!(code, Some(2), "{err}");
    let fake = std::fs::canonicalize(stack::bin("fake-llama-server")).expect("fake");
    let s = script.display();
    assert_eq!(
        err,
        format!(
            "bxctl: fake-llama-server exited (exit status: 2) with the script {s}:\n\
             | fake-llama-server: script {s}: TOML parse error at line 2, column 1\n\
             |   |\n\
             | 2 | n_ctxx = 4096\n\
             |   | ^^^^^^\n\
             | unknown field `n_ctxx`, expected one of `n_ctx`, `total_slots`, `model`, \
             `loading_ms`, `reasoning`, `chunk_chars`, `build_info`, `metrics`, `tools`\n\
             help: check the script with `{} --script {s} --check`; its format is in \
             docs/fake-llama-server.md\n",
            fake.display()
        )
    );
    let _ = std::fs::remove_dir_all(&state);
    let _ = std::fs::remove_file(&script);
}

#[test]
fn a_session_that_does_not_exist_is_said_before_anything_is_sent() {
    let state = state_dir("no-session");
    let (code, _, err) = run(&state, &["-m", "hello"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = run(
        &state,
        &["--session", "s-20261201-0000000000000000", "-m", "hi"],
    );
    assert_eq!(code, Some(1), "{err}");
    let sessions: Vec<String> = std::fs::read_dir(state.join("home/sessions"))
        .expect("sessions")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(
        err,
        format!(
            "bxctl: no session s-20261201-0000000000000000: loopd keeps no log of it\n\
             help: the most recent are {}; leave out --session to start a new one\n",
            sessions[0]
        )
    );
    // `bxctl session` of a session loopd has no log of: not brokerd's defaults, exit 1.
    let mut s = dev(&state, &[]);
    let out = Command::new(stack::bin("bxctl"))
        .args(["session", "s-bogus"])
        .env("BOXMAKER_CONFIG", state.join("config.toml"))
        .output()
        .expect("bxctl session");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "bxctl: no session s-bogus: loopd keeps no log of it\nhelp: the most recent are \
             {}\n",
            sessions[0]
        )
    );
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn a_bad_llama_url_is_blamed_on_the_flag_before_anything_is_written() {
    let state = state_dir("bad-url");
    let (code, out, err) = run(&state, &["--llama-url", "localhost:8080", "-m", "hi"]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        "bxctl: --llama-url \"localhost:8080\": must start with http:// (llama-server on \
         loopback)\nhelp: give the address llama-server listens on, on this machine, for \
         example `--llama-url http://127.0.0.1:8080` (docs/model.md)\n"
    );
    assert!(!state.exists(), "the state directory was written");
    let (code, _, err) = run(
        &state,
        &["--llama-url", "http://192.0.2.1:8080", "-m", "hi"],
    );
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(
            "bxctl: --llama-url \"http://192.0.2.1:8080\": only a loopback address \
             (127.0.0.0/8, [::1], localhost) is allowed\nhelp: "
        ),
        "{err}"
    );
}

#[test]
fn an_unreachable_model_ends_the_wait_with_help() {
    let state = state_dir("unreachable");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let started = std::time::Instant::now();
    let url = format!("http://127.0.0.1:{port}");
    let (code, out, err) = run(&state, &["--llama-url", &url, "-m", "hi"]);
    let took = started.elapsed();
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        out.contains("waiting for the model: 502: llama-server is not reachable\n"),
        "{out}"
    );
    let waited = err
        .strip_prefix(&format!(
            "bxctl: the model at {url} (--llama-url) is not usable after "
        ))
        .and_then(|rest| rest.split_once('s'))
        .map(|(secs, _)| secs.parse::<u64>().expect("seconds"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!((20..=22).contains(&waited), "{err}");
    assert!(took.as_secs() < 40, "the wait took {took:?}");
    assert!(
        err.ends_with(
            "s: 502: llama-server is not reachable\nhelp: is llama-server running there? Start \
             it as docs/model.md says and give its address with --llama-url, or start it with \
             `bxctl dev --model FILE.gguf`; without either, `bxctl dev` plays the demo\n"
        ),
        "{err}"
    );
    // inferproxy, brokerd, loopd and the indexer: no model server of bxctl's own.
    crate::dev::roles_gone(&state, 4, std::time::Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn a_model_file_or_llama_server_that_is_not_there_is_said_with_help() {
    let state = state_dir("no-model");
    let gone = state.with_extension("gguf");
    let (code, _, err) = run(
        &state,
        &["--model", &gone.display().to_string(), "-m", "hi"],
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        format!(
            "bxctl: --model {}: No such file or directory (os error 2)\nhelp: give the path of \
             a model file in GGUF form (docs/model.md says which models call tools)\n",
            gone.display()
        )
    );
    std::fs::write(&gone, "not really a model").expect("file");
    let out = dev_command(
        &state,
        &["--model", &gone.display().to_string(), "-m", "hi"],
    )
    .env("PATH", "/nonexistent")
    .output()
    .expect("bxctl dev");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "bxctl: llama-server is not on PATH\nhelp: install llama.cpp's server (docs/model.md \
         says where to get it), or name it with --llama-server PATH\n"
    );
    let _ = std::fs::remove_dir_all(&state);
    let _ = std::fs::remove_file(&gone);
}

#[test]
fn a_job_that_fails_under_bxctl_dev_says_why_and_where_to_look() {
    let state = state_dir("job-fails");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::write(
        state.join("jobs.toml"),
        crate::job_notes::note_job("daily", "Read my passwd.", "daily-brief"),
    )
    .expect("jobs.toml");
    let mut s = dev(&state, &[]);
    let out = Command::new(stack::bin("bxctl"))
        .args(["job", "run", "daily"])
        .env("BOXMAKER_CONFIG", state.join("config.toml"))
        .output()
        .expect("bxctl job run");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // The sample grants read the demo's files only (a job gets no ordinary grant anyway).
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "job daily: the run failed: Call 1 (read_file) denied (no_grant: grant files-read: \
             \"/etc/passwd\" is not under any of {}/files/notes)\nhelp: `bxctl sessions` lists \
             the run's session (job-daily-…) with the turn that failed; its result, when \
             delivered, is in note daily-brief (`bxctl notes show daily-brief`)\n",
            state.display()
        )
    );
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
}
