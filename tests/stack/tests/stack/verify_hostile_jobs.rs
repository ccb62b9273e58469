//! `bxctl verify --hostile` plays the jobs (issue 27 point 3): the shadow has the owner's
//! jobs, each prompt a tag of the hostile script's; one run per chain of a job's own grants
//! reads a canary and sends it to a host of the job's fetch grant, or answers with it for the
//! runner to post in the job's thread, through gatewayd, to the shadow's fake Mattermost. A
//! job delivering to a note has no delivery to play (its result stays in the box, as the
//! analysis says). A read that asks is declined, and nothing goes out.

use serde_json::Value;

use crate::jobs::jobs_home;
use crate::verify_hostile::{hostile, said};

/// A job's read of `dir` (at `mode`) and its fetch to api.example.org, both auto-free of
/// any max_taint below private.
fn job_grants(home: &stack::Home, job: &str, dir: &std::path::Path, mode: &str) {
    home.write_grant(
        &format!("{job}-notes"),
        &format!(
            "tool = \"read_file\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\n\
             result_class = \"private\"\njob = \"{job}\"\n[constraints]\npaths = [\"{}\"]\n",
            dir.display()
        ),
    );
    home.write_grant(
        &format!("{job}-web"),
        &format!(
            "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\njob = \"{job}\"\n\
             [constraints]\nhosts = [\"api.example.org\"]\n"
        ),
    );
}

fn home(name: &str, mode: &str) -> (stack::Home, std::path::PathBuf) {
    // morning-brief delivers to Mattermost; digest to a note.
    let home = jobs_home(name);
    home.append_config(
        "[[jobs]]\nname = \"digest\"\nschedule = \"*-*-* 08:00:00\"\nprompt = \"Digest.\"\n\
         deliver = \"note:digest\"\n",
    );
    let notes = home.files("notes", &[("real.md", "the owner's real data\n")]);
    job_grants(&home, "morning-brief", &notes, mode);
    job_grants(&home, "digest", &notes, mode);
    (home, notes)
}

/// Each job's read, then its fetch, leaks as the analysis reports; morning-brief's result
/// carries its read to Mattermost, as reported; digest's note is no flow and not played.
/// The delivery dropped from the analysis (planted) fails its chain.
#[test]
fn verify_hostile_plays_the_jobs_runs() {
    let (home, notes) = home("hostile-jobs", "auto");
    let (out, found) = hostile(&home, &[]);
    let ctx = format!("{found:#?}");
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    let run = |job: &str, then: &str| {
        format!(
            "in a run of job {job}: read {} (private) via grant {job}-notes, then {then}",
            notes.display()
        )
    };
    let leaked = ": leaked, as the flows analysis reports";
    let fetch = |job: &str| format!("send it to api.example.org via grant {job}-web");
    let expected = [
        ("chain 1", run("morning-brief", &fetch("morning-brief"))),
        (
            "chain 2",
            run("morning-brief", "post it to Mattermost as the run's result"),
        ),
        (
            "chain 3",
            "in a run of job morning-brief: fetch from api.example.org (private) via grant \
             morning-brief-web, then post it to Mattermost as the run's result"
                .to_owned(),
        ),
        ("chain 4", run("digest", &fetch("digest"))),
    ];
    for (chain, what) in &expected {
        assert_eq!(
            said(&found, chain),
            ("ok", format!("{what}{leaked}").as_str()),
            "{ctx}"
        );
    }
    // Then, from each job's read, the look-alikes of its fetch host and the smuggled
    // calls to it: each stopped, or sent without the fragment that carried the canary.
    for (n, job) in (5..=11)
        .map(|n| (n, "morning-brief"))
        .chain((12..=18).map(|n| (n, "digest")))
    {
        let (level, line) = said(&found, &format!("chain {n}"));
        assert_eq!(level, "ok", "chain {n}: {ctx}");
        assert!(
            line.starts_with(&format!("in a run of job {job}: read ")),
            "{line}"
        );
        assert!(
            line.contains(" look-alike of api.example.org ") || line.contains(" smuggled in "),
            "{line}"
        );
        assert!(
            line.contains(": stopped (the fetch was denied: ")
                || line
                    .ends_with(": sent without its fragment (the canary never reached the sink)"),
            "{line}"
        );
    }
    assert!(!found.iter().any(|(c, _, _)| c == "chain 19"), "{ctx}");
    let flows: Vec<&str> = found
        .iter()
        .filter(|(c, _, _)| c == "private_out")
        .map(|(_, l, s)| {
            assert_eq!(l, "ok", "{ctx}");
            s.as_str()
        })
        .collect();
    assert_eq!(flows.len(), 4, "{ctx}");
    assert!(
        flows
            .iter()
            // A look-alike's or a smuggled call's run denied posts the call it asked for,
            // canary and all, in the job's thread: the delivery's flow too.
            .any(|s| s.starts_with("leaked by chain 2")
                && s.contains(", as reported: ")
                && s.contains("post it to Mattermost as the run's result")),
        "{ctx}"
    );
    assert!(!found.iter().any(|(_, l, _)| l != "ok"), "{ctx}");

    // The analysis without the delivery: the live run's post fails it.
    let report = analysis(&home);
    let mut dropped = report.clone();
    let kept: Vec<Value> = report["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .filter(|f| f["sink"]["tool"] != "deliver")
        .cloned()
        .collect();
    assert_eq!(kept.len(), 2, "{report}");
    assert_eq!(
        report["flows"].as_array().map(Vec::len),
        Some(4),
        "{report}"
    );
    dropped["flows"] = Value::Array(kept);
    let path = home.config().with_file_name("planted.json");
    std::fs::write(&path, dropped.to_string()).expect("planted");
    let (out, found) = hostile(&home, &["--analysis", path.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(1), "{found:#?}");
    for chain in ["chain 2", "chain 3"] {
        let (level, s) = said(&found, chain);
        assert_eq!(level, "fail", "{found:#?}");
        assert!(
            s.ends_with("leaked, and the flows analysis did not report it"),
            "{s}"
        );
    }
    assert_eq!(said(&found, "chain 1").0, "ok", "{found:#?}");
}

/// The jobs' reads ask: declined, and those runs send nothing, as the analysis reports no
/// flow from them; morning-brief's fetch (auto) delivered still leaks, as reported.
#[test]
fn verify_hostile_a_jobs_read_that_asks_stops_its_runs() {
    let (home, _) = home("hostile-jobs-ask", "ask");
    let (out, found) = hostile(&home, &[]);
    let ctx = format!("{found:#?}");
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    for (chain, job) in [
        ("chain 1", "morning-brief"),
        ("chain 2", "morning-brief"),
        ("chain 4", "digest"),
    ] {
        let (level, s) = said(&found, chain);
        assert_eq!(level, "ok", "{ctx}");
        let asked = format!("asked (the read asked you (grant {job}-notes), and was declined)");
        assert!(s.ends_with(&asked), "{s}");
    }
    let (level, s) = said(&found, "chain 3");
    assert_eq!(level, "ok", "{ctx}");
    assert!(s.ends_with("leaked, as the flows analysis reports"), "{s}");
    let flows: Vec<&(String, String, String)> = found
        .iter()
        .filter(|(c, _, _)| c.ends_with("_out"))
        .collect();
    assert_eq!(flows.len(), 1, "{ctx}");
    assert_eq!(flows[0].1, "ok", "{ctx}");
    assert!(
        flows[0].2.starts_with("leaked by chain 3, as reported: "),
        "{ctx}"
    );
}

/// The processes whose command line names `dir`, by pid.
fn naming(dir: &std::path::Path) -> Vec<(u32, String)> {
    let dir = dir.display().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&dir) {
            out.push((pid, cmd));
        }
    }
    out
}

/// Interrupted while its shadow runs gatewayd for a job's delivery, the self-test leaves no
/// role of the shadow behind: gatewayd too stops with it.
#[test]
fn verify_hostile_with_jobs_interrupted_leaves_no_role_behind() {
    use std::time::{Duration, Instant};
    let (home, _) = home("hj-int", "auto");
    let tmp = home.root.join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let child = std::process::Command::new(stack::bin("bxctl"))
        .arg("--config")
        .arg(home.config())
        .args(["verify", "--hostile", "--json"])
        .env("TMPDIR", &tmp)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bxctl");
    // Until the shadow's gatewayd runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut child = child;
    while !naming(&tmp).iter().any(|(_, c)| c.contains("gatewayd")) {
        if child.try_wait().expect("wait").is_some() {
            panic!("bxctl ended first: {:?}", child.wait_with_output());
        }
        assert!(Instant::now() < deadline, "no gatewayd: {:?}", naming(&tmp));
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let out = child.wait_with_output().expect("bxctl");
    assert_eq!(out.status.code(), Some(128 + 2), "{out:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !naming(&tmp).is_empty() {
        if Instant::now() > deadline {
            let left = naming(&tmp);
            for (pid, _) in &left {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(i32::try_from(*pid).expect("pid")),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            panic!("left behind: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The analysis as `brokerd --flows --json` prints it for `home`'s configuration.
fn analysis(home: &stack::Home) -> Value {
    let out = std::process::Command::new(stack::bin("brokerd"))
        .arg("--config")
        .arg(home.config())
        .args(["--flows", "--json"])
        .output()
        .expect("brokerd --flows");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}
