//! A job under the real `bxctl dev`: its `jobs.toml` joins the generated configuration
//! (the jobs sockets and `peers.jobs` are there always), `bxctl job run NAME` in another
//! terminal starts the job's runner as the developer, and the job, delivering to a note,
//! needs no gateway; `bxctl notes show` then reads what it wrote.

use std::path::Path;
use std::process::{Command, Output};

use crate::dev::{dev, quit, state_dir};
use crate::job_notes::note_job;

/// bxctl as a second terminal would run it, with the hint `bxctl dev` printed.
fn bxctl(state: &Path, args: &[&str]) -> Output {
    Command::new(stack::bin("bxctl"))
        .args(args)
        .env("BOXMAKER_CONFIG", state.join("config.toml"))
        .output()
        .expect("bxctl")
}

#[test]
fn a_job_runs_under_bxctl_dev_and_delivers_to_a_note() {
    let state = state_dir("jobs");
    let script = state.with_extension("toml");
    std::fs::write(
        &script,
        "[[rule]]\n[rule.match]\nuser_contains = \"brief\"\n[rule.answer]\n\
         text = \"Today: standup at 9.\"\n[default]\ntext = \"hello\"\n",
    )
    .expect("script");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::write(
        state.join("jobs.toml"),
        note_job("daily", "Write my brief.", "daily-brief"),
    )
    .expect("jobs.toml");
    let mut s = dev(&state, &["--script", &script.display().to_string()]);

    let out = bxctl(&state, &["job", "run", "daily"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(said, "job daily: done, result delivered\n");

    let out = bxctl(&state, &["notes", "show", "daily-brief"]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(shown.contains("# Job daily, run of "), "{shown}");
    assert!(shown.contains("Today: standup at 9."), "{shown}");
    let listed = String::from_utf8_lossy(&bxctl(&state, &["jobs"]).stdout).into_owned();
    assert!(listed.starts_with("daily "), "{listed}");
    assert!(listed.contains(" done "), "{listed}");

    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
    let _ = std::fs::remove_file(&script);
}

#[test]
fn a_jobs_file_with_anything_but_jobs_is_refused_with_what_to_fix() {
    let state = state_dir("jobs-bad");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::write(state.join("jobs.toml"), "[broker]\nrunner = \"systemd\"\n").expect("file");
    let out = Command::new(stack::bin("bxctl"))
        .args(["dev", "--state"])
        .arg(&state)
        .args(["-m", "hi"])
        .env_remove("BOXMAKER_CONFIG")
        .output()
        .expect("bxctl dev");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("jobs.toml"), "{err}");
    assert!(err.contains("it holds only [[jobs]] entries"), "{err}");
    let _ = std::fs::remove_dir_all(&state);
}
