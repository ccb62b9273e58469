//! The direct runner against small shell-script tools, and the process handling it shares
//! with the systemd runner.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use brokerd::run::runner::{DirectRunner, RunOutcome, RunSpec};

use super::{Execute, Scratch, read_file_spec, secret_spec};

/// Writes an executable `#!/bin/sh` script.
pub(super) fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::io::Write;
    let path = dir.join(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&path)
        .expect("create script");
    file.write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
        .expect("write script");
    path
}

/// A script that reads its request, prints `output` and exits with `code`.
fn printing(dir: &Path, output: &str, code: i32) -> PathBuf {
    script(
        dir,
        "tool",
        &format!("cat >/dev/null\ncat <<'EOF'\n{output}\nEOF\nexit {code}"),
    )
}

/// Runs `spec`, retrying while the script is "Text file busy": another test thread may
/// have forked while this one still had the script open for writing.
pub(super) fn run_retrying(run: impl Fn() -> RunOutcome) -> RunOutcome {
    for _ in 0..50 {
        match run() {
            RunOutcome::Failed { message, .. } if message.contains("Text file busy") => {
                std::thread::sleep(Duration::from_millis(20));
            }
            outcome => return outcome,
        }
    }
    run()
}

fn direct(tool: PathBuf, spec: &RunSpec) -> RunOutcome {
    let runner = DirectRunner { tool };
    run_retrying(|| runner.execute(spec))
}

fn failed_message(outcome: RunOutcome) -> String {
    match outcome {
        RunOutcome::Failed { message, .. } => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn a_normal_result_passes_and_the_request_arrives_on_stdin() {
    let dir = Scratch::new("direct-ok");
    let request = dir.path().join("request.json");
    let tool = script(
        dir.path(),
        "tool",
        &format!(
            "cat > {}\nprintf '%s' '{{\"status\":\"ok\",\"content\":\"hello\",\"truncated\":false}}'",
            request.display()
        ),
    );
    let spec = read_file_spec();
    let outcome = direct(tool, &spec);
    assert_eq!(
        outcome,
        RunOutcome::Ok {
            content: "hello".into(),
            truncated: false
        }
    );
    let sent = std::fs::read(&request).expect("the script saved its stdin");
    let expected = serde_json::to_vec(&spec.invocation).expect("encode");
    assert_eq!(sent, expected);
}

#[test]
fn new_builds_a_runner_for_the_tool() {
    let runner = DirectRunner::new("/usr/bin/boxmaker-tool");
    assert_eq!(runner.tool, PathBuf::from("/usr/bin/boxmaker-tool"));
}

#[test]
fn output_over_the_cap_is_refused_and_the_tool_killed() {
    let dir = Scratch::new("direct-cap");
    // Never stops writing: only the cap and the kill end this run.
    let tool = script(dir.path(), "tool", "cat >/dev/null\nexec yes");
    let started = Instant::now();
    let message = failed_message(direct(tool, &read_file_spec()));
    assert!(message.contains("output over the limit"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn long_content_is_cut_at_a_char_boundary_whatever_the_tool_claims() {
    let dir = Scratch::new("direct-cut");
    // 1 + 2 * 600 bytes; byte 1024 falls inside an "é", so the cut lands on 1023.
    let content = format!("a{}", "é".repeat(600));
    let output = serde_json::json!({"status": "ok", "content": content, "truncated": false});
    let tool = printing(dir.path(), &output.to_string(), 0);
    match direct(tool, &read_file_spec()) {
        RunOutcome::Ok { content, truncated } => {
            assert!(truncated);
            assert_eq!(content.len(), 1023);
            assert!(content.ends_with('é'));
        }
        other => panic!("expected a result, got {other:?}"),
    }
}

#[test]
fn a_result_within_the_limit_keeps_the_tools_truncated_flag() {
    let dir = Scratch::new("direct-flag");
    let tool = printing(
        dir.path(),
        r#"{"status":"ok","content":"part","truncated":true}"#,
        0,
    );
    assert_eq!(
        direct(tool, &read_file_spec()),
        RunOutcome::Ok {
            content: "part".into(),
            truncated: true
        }
    );
}

#[test]
fn a_tool_past_its_time_limit_is_killed() {
    let dir = Scratch::new("direct-time");
    let tool = script(dir.path(), "tool", "cat >/dev/null\nsleep 30");
    let mut spec = read_file_spec();
    spec.limits.time_limit = Duration::from_millis(300);
    let started = Instant::now();
    let message = failed_message(direct(tool, &spec));
    assert_eq!(message, "timed out after 0.3 s");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_non_zero_exit_fails_with_the_stderr_tail() {
    let dir = Scratch::new("direct-exit");
    let tool = script(
        dir.path(),
        "tool",
        "cat >/dev/null\nhead -c 10000 /dev/zero | tr '\\0' x >&2\necho ' boom: disk on fire' >&2\nexit 3",
    );
    let message = failed_message(direct(tool, &read_file_spec()));
    assert!(
        message.starts_with("the tool exited with status 3; stderr: …"),
        "{message}"
    );
    assert!(message.ends_with("boom: disk on fire"), "{message}");
    // The tail is capped: the message, the prefix and at most 2 KiB of stderr.
    assert!(message.len() < 2048 + 100, "{}", message.len());
}

#[test]
fn a_tool_killed_by_a_signal_fails() {
    let dir = Scratch::new("direct-signal");
    let tool = script(dir.path(), "tool", "cat >/dev/null\nkill -9 $$");
    let message = failed_message(direct(tool, &read_file_spec()));
    assert_eq!(message, "the tool was killed by signal SIGKILL (no stderr)");
}

#[test]
fn garbage_and_unknown_fields_are_not_a_result() {
    for (i, output) in [
        "not json",
        "",
        r#"{"status":"ok","content":"x","truncated":false,"label":"public"}"#,
        r#"{"status":"ok","content":"x"}"#,
        r#"{"status":"ok","content":"x","truncated":false} {}"#,
    ]
    .into_iter()
    .enumerate()
    {
        let dir = Scratch::new(&format!("direct-garbage{i}"));
        let tool = printing(dir.path(), output, 0);
        let message = failed_message(direct(tool, &read_file_spec()));
        assert!(
            message.starts_with("the tool printed no valid result"),
            "{output}: {message}"
        );
    }
}

#[test]
fn the_tools_own_failure_is_passed_on_and_a_failing_success_is_not_believed() {
    let dir = Scratch::new("direct-failed");
    let failed = r#"{"status":"failed","message":"no such file"}"#;
    let tool = printing(dir.path(), failed, 0);
    assert_eq!(
        failed_message(direct(tool, &read_file_spec())),
        "no such file"
    );

    let dir = Scratch::new("direct-failed-exit");
    let tool = printing(dir.path(), failed, 2);
    assert_eq!(
        failed_message(direct(tool, &read_file_spec())),
        "no such file"
    );

    let dir = Scratch::new("direct-ok-exit");
    let ok = r#"{"status":"ok","content":"x","truncated":false}"#;
    let tool = printing(dir.path(), ok, 1);
    let message = failed_message(direct(tool, &read_file_spec()));
    assert!(
        message.starts_with("the tool exited with status 1"),
        "{message}"
    );
}

#[test]
fn the_secret_is_in_a_private_credentials_directory_removed_afterwards() {
    let dir = Scratch::new("direct-secret");
    let source = dir.path().join("api-key-source");
    std::fs::write(&source, "sk-test-123").expect("write secret");
    // Reports the directory, its mode, the file's mode and content, and the environment.
    let tool = script(
        dir.path(),
        "tool",
        r#"cat >/dev/null
d="$CREDENTIALS_DIRECTORY"
c="$d $(stat -c %a "$d") $(stat -c %a "$d/api-key") $(cat "$d/api-key") $(env | sort | tr '\n' ' ')"
printf '{"status":"ok","content":"%s","truncated":false}' "$c""#,
    );
    let spec = secret_spec(&source);
    let content = match direct(tool, &spec) {
        RunOutcome::Ok { content, .. } => content,
        other => panic!("expected a result, got {other:?}"),
    };
    let mut words = content.split(' ');
    let credentials = words.next().expect("directory");
    assert!(
        Path::new(credentials).starts_with(std::env::temp_dir()),
        "{content}"
    );
    assert_eq!(words.next(), Some("700"), "{content}");
    assert_eq!(words.next(), Some("400"), "{content}");
    assert_eq!(words.next(), Some("sk-test-123"), "{content}");
    // Nothing of brokerd's (the test's) environment: HOME, CARGO_*, RUST_* are all absent.
    let env: Vec<&str> = words.filter(|w| !w.is_empty()).collect();
    for var in &env {
        let name = var.split('=').next().unwrap_or_default();
        assert!(
            matches!(
                name,
                "CREDENTIALS_DIRECTORY" | "PATH" | "PWD" | "SHLVL" | "_"
            ),
            "unexpected variable {var} in {content}"
        );
    }
    assert!(env.contains(&"PATH=/usr/bin:/bin"), "{content}");
    assert!(
        !Path::new(credentials).exists(),
        "{credentials} was left behind"
    );
}

#[test]
fn a_missing_secret_or_tool_fails_without_running_anything() {
    let dir = Scratch::new("direct-missing");
    let spec = secret_spec(&dir.path().join("absent"));
    let tool = printing(
        dir.path(),
        r#"{"status":"ok","content":"","truncated":false}"#,
        0,
    );
    let message = failed_message(direct(tool, &spec));
    assert!(
        message.starts_with("preparing credential \"api-key\""),
        "{message}"
    );

    let message = failed_message(direct(dir.path().join("no-such-tool"), &read_file_spec()));
    assert!(message.starts_with("could not start the tool"), "{message}");
}

#[test]
fn zero_limits_and_bad_credential_names_are_refused() {
    let runner = DirectRunner {
        tool: PathBuf::from("/bin/true"),
    };
    let mut spec = read_file_spec();
    spec.limits.time_limit = Duration::ZERO;
    assert!(failed_message(runner.execute(&spec)).contains("above zero"));
    let mut spec = secret_spec(Path::new("/x"));
    if let Some(secret) = spec.secret.as_mut() {
        secret.name = "../escape".into();
    }
    assert!(failed_message(runner.execute(&spec)).contains("credential name"));
}

#[test]
fn a_tool_that_ignores_stdin_and_writes_much_stderr_does_not_block() {
    let dir = Scratch::new("direct-pipes");
    // 1 MiB of stderr, far beyond a pipe's buffer, before any stdout; stdin never read.
    let tool = script(
        dir.path(),
        "tool",
        r#"head -c 1048576 /dev/zero >&2
printf '{"status":"ok","content":"done","truncated":false}'"#,
    );
    let mut spec = read_file_spec();
    spec.limits.time_limit = Duration::from_secs(20);
    assert_eq!(
        direct(tool, &spec),
        RunOutcome::Ok {
            content: "done".into(),
            truncated: false
        }
    );
}
