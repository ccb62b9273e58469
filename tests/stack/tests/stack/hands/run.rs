//! `run` through brokerd on the direct runner (no sandbox: the container and VM tiers
//! prove the units): a granted program by name, each argument matched on its own, input
//! only where granted, its end typed and audited, its output capped and the cut marked,
//! and its answer labelled with the paths it had bound.

use proto::{DenyReason, ToolFailure, ToolResponse};
use stack::{Home, read_grant};

use super::{call, tool_failed};

/// python3's path on this machine, when it has one (the gate requires it): the system's,
/// not a version manager's shim (a script that finds python through a `PATH` the run
/// does not have).
pub(crate) fn python3() -> Option<String> {
    if !stack::have("python3") {
        return None;
    }
    let out = std::process::Command::new("sh")
        .args(["-c", "for p in /usr/bin/python3 /usr/local/bin/python3 \"$(command -v python3)\"; do [ -x \"$p\" ] && ! head -c2 \"$p\" | grep -q '#!' && echo \"$p\" && break; done"])
        .output()
        .expect("sh");
    let found = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (!found.is_empty()).then_some(found)
}

fn home(name: &str, constraints: &str) -> Option<Home> {
    let python = python3()?;
    let home = Home::new(name, "");
    home.append_config(&format!("[broker.programs]\npython3 = \"{python}\"\n"));
    home.write_grant(
        "py",
        &format!(
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
             programs = [\"python3\"]\n{constraints}\n"
        ),
    );
    Some(home)
}

fn run_args(args: &[&str], stdin: Option<&str>) -> String {
    let mut v = serde_json::json!({ "program": "python3", "args": args });
    if let Some(s) = stdin {
        v["stdin"] = s.into();
    }
    v.to_string()
}

#[test]
fn a_run_passes_its_arguments_as_they_are_and_types_its_end() {
    let Some(home) = home("hands-run", "patterns = [\"-c\", \"import sys*\"]") else {
        return;
    };
    let _d = home.start();
    let code = "import sys; print(sys.argv[1:]); sys.stderr.write('e')";
    let ok = call(&home, "s-r", 1, "run", &run_args(&["-c", code], None));
    let ToolResponse::Result { content, .. } = &ok else {
        panic!("{ok:?}")
    };
    assert!(
        content.starts_with("exited with status 0\nstdout (3 bytes):\n[]\n"),
        "{content}"
    );
    assert!(content.ends_with("stderr (1 bytes):\ne"), "{content}");
    // A status other than 0 is a failed result, typed, its output kept, and audited.
    let bad = call(
        &home,
        "s-r",
        2,
        "run",
        &run_args(&["-c", "import sys; print('out'); sys.exit(3)"], None),
    );
    let exited = ToolFailure::Exited { status: 3 };
    assert!(
        matches!(&bad, ToolResponse::Failed { message, failure: Some(f) } if *f == exited && message.contains("out")),
        "{bad:?}"
    );
    assert_eq!(tool_failed(&home, "s-r", 2), [exited]);
    // An argument no pattern matches, or input the grant does not give, is no grant's.
    let other = call(&home, "s-r", 3, "run", &run_args(&["-V"], None));
    assert!(
        matches!(&other, ToolResponse::Denied { reason: DenyReason::NoGrant, detail: Some(d) } if d.contains("-V")),
        "{other:?}"
    );
    let input = call(
        &home,
        "s-r",
        4,
        "run",
        &run_args(&["-c", "import sys"], Some("x")),
    );
    assert!(
        matches!(
            input,
            ToolResponse::Denied {
                reason: DenyReason::NoGrant,
                ..
            }
        ),
        "{input:?}"
    );
    // Nor is another program, whatever its path.
    let sh = call(
        &home,
        "s-r",
        5,
        "run",
        r#"{"program":"sh","args":["-c","id"]}"#,
    );
    assert!(
        matches!(
            sh,
            ToolResponse::Denied {
                reason: DenyReason::NoGrant,
                ..
            }
        ),
        "{sh:?}"
    );
    home.assert_audit_good();
}

#[test]
fn a_run_with_input_reads_it_and_one_past_its_time_is_a_time_limit() {
    let Some(home) = home(
        "hands-run-time",
        "patterns = [\"-\", \"-c\", \"import*\"]\nstdin = true\ntimeout_secs = 1",
    ) else {
        return;
    };
    let _d = home.start();
    let ok = call(
        &home,
        "s-t",
        1,
        "run",
        &run_args(&["-"], Some("print(6 * 7)")),
    );
    assert!(
        matches!(&ok, ToolResponse::Result { content, .. } if content.contains("42")),
        "{ok:?}"
    );
    let started = std::time::Instant::now();
    let late = call(
        &home,
        "s-t",
        2,
        "run",
        &run_args(&["-c", "import time; time.sleep(30)"], None),
    );
    assert!(
        matches!(
            &late,
            ToolResponse::Failed {
                failure: Some(ToolFailure::TimeLimit),
                ..
            }
        ),
        "{late:?}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(tool_failed(&home, "s-t", 2), [ToolFailure::TimeLimit]);
    home.assert_audit_good();
}

#[test]
fn a_runs_output_is_capped_and_the_cut_marked() {
    let Some(home) = home(
        "hands-run-cap",
        "patterns = [\"-c\", \"print*\"]\noutput_kib = 1",
    ) else {
        return;
    };
    let _d = home.start();
    let r = call(
        &home,
        "s-o",
        1,
        "run",
        &run_args(&["-c", "print('x' * 5000)"], None),
    );
    let ToolResponse::Result {
        content, truncated, ..
    } = &r
    else {
        panic!("{r:?}")
    };
    assert!(*truncated);
    assert!(
        content.contains("stdout (the first 1024 of 5001 bytes):"),
        "{content}"
    );
    assert!(content.len() < 2048, "{}", content.len());
}

#[test]
fn a_runs_answer_takes_the_labels_of_the_paths_it_had_bound() {
    let Some(home) = home("hands-run-labels", "patterns = [\"-c\", \"print*\"]") else {
        return;
    };
    let secret = home.files("secret", &[("key.txt", "k")]);
    home.write_grant(
        "secret-read",
        &read_grant("auto", &secret, "result_class = \"secret\""),
    );
    home.write_grant(
        "py",
        &format!(
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\n\
             [constraints]\nprograms = [\"python3\"]\npatterns = [\"-c\", \"print*\"]\n\
             paths = [\"{}\"]\n",
            secret.display()
        ),
    );
    let _d = home.start();
    let r = call(&home, "s-b", 1, "run", &run_args(&["-c", "print(1)"], None));
    assert!(
        matches!(
            &r,
            ToolResponse::Result {
                class: proto::DataClass::Secret,
                ..
            }
        ),
        "the run's grant says public, the bound path reads back secret: {r:?}"
    );
}
