//! The systemd runner's tool unit as `systemd-analyze security --offline` scores it, and its
//! process handling against a fake `systemd-run` and `systemctl`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use brokerd::run::runner::{RunOutcome, RunSpec, SystemdRunner};
use proto::ToolFailure;

use super::direct::{run_retrying, script};
use super::systemd::runner;
use super::{Execute, Scratch, bind_at, http_fetch_spec, read_file_spec, secret_spec};

/// `systemd-analyze security --offline` on the unit file: (exposure, stderr). None when
/// the tool is not installed (the Nix build sandbox), after saying so.
fn exposure(runner: &SystemdRunner, spec: &RunSpec) -> Option<(f64, String)> {
    let dir = Scratch::new("analyze");
    let file = dir.path().join(format!("{}.service", spec.unit));
    std::fs::write(&file, runner.unit_file(spec)).expect("write unit file");
    let output = match Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--threshold=100"])
        .arg(&file)
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var_os("BOXMAKER_GATE").is_none(),
                "systemd-analyze is missing, and the gate needs it"
            );
            #[allow(clippy::print_stderr)] // reason: a skipped check must say so in the test log
            {
                eprintln!("SKIPPED: systemd-analyze is not installed; exposure not measured");
            }
            return None;
        }
        Err(e) => panic!("running systemd-analyze: {e}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("Overall exposure level for"))
        .unwrap_or_else(|| panic!("no exposure line in: {stdout}"));
    let figure = line
        .rsplit_once(": ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no figure in {line:?}"));
    Some((figure, String::from_utf8_lossy(&output.stderr).into_owned()))
}

#[test]
fn systemd_analyze_scores_a_no_network_tool_unit_at_most_1_0() {
    let runner = runner();
    let mut home = read_file_spec();
    home.bind = Some(bind_at("/home/owner/notes/todo.md"));
    // Measured: 0.1 (ProtectClock= implies DeviceAllow=char-rtc r); 0.2 with a grant under
    // /home (ProtectHome=tmpfs).
    for (spec, measured) in [
        (read_file_spec(), 0.1),
        (secret_spec(Path::new("/run/credentials/b/api-key")), 0.1),
        (home, 0.2),
    ] {
        if let Some((figure, stderr)) = exposure(&runner, &spec) {
            // systemd-analyze ignores unknown keys and bad values with a warning only.
            assert_eq!(stderr, "", "systemd-analyze warned about the unit");
            assert!(figure <= 1.0, "exposure {figure}");
            assert!(figure <= measured, "exposure rose to {figure}");
        }
    }
}

#[test]
fn systemd_analyze_scores_a_network_tool_unit_at_most_2_0() {
    if let Some((figure, stderr)) = exposure(&runner(), &http_fetch_spec()) {
        assert_eq!(stderr, "", "systemd-analyze warned about the unit");
        assert!(figure <= 2.0, "exposure {figure}");
        // Measured: 0.9 (host network, IP sockets, a non-local allow list, char-rtc).
        assert!(figure <= 0.9, "exposure rose to {figure}");
    }
}

/// A fake `systemd-run` that logs its arguments and then behaves as `body` says, next to a
/// fake `systemctl` that logs its calls. The tool is a script printing a fixed result.
fn fake(dir: &Path, body: &str) -> SystemdRunner {
    let log = dir.join("systemctl.log");
    script(
        dir,
        "systemctl",
        &format!("echo \"$*\" >> {}", log.display()),
    );
    let tool = script(
        dir,
        "tool",
        r#"cat >/dev/null
printf '{"status":"ok","content":"via unit","truncated":false}'"#,
    );
    let systemd_run = script(dir, "systemd-run", body);
    SystemdRunner {
        tool,
        root: PathBuf::from("/run/boxmaker/tool-root"),
        binds: vec!["/usr".into()],
        systemd_run,
        hands_user: None,
        systemd_version: 257,
    }
}

/// The fake passes everything after `--` on, as systemd-run's unit would run it.
const PASS_THROUGH: &str = "while [ \"$1\" != \"--\" ]; do shift; done\nshift\nexec \"$@\"";

#[test]
fn a_run_through_systemd_run_returns_the_tools_result() {
    let dir = Scratch::new("fake-ok");
    let runner = fake(dir.path(), PASS_THROUGH);
    assert_eq!(
        run_retrying(|| runner.execute(&read_file_spec())),
        RunOutcome::Ok {
            content: "via unit".into(),
            truncated: false
        }
    );
    assert!(
        !dir.path().join("systemctl.log").exists(),
        "nothing to stop"
    );
}

#[test]
fn runtime_max_sec_firing_first_is_reported_as_a_timeout() {
    let dir = Scratch::new("fake-runtime");
    // What systemd-run does when RuntimeMaxSec= ends the unit: exit 1 once it is over.
    let runner = fake(dir.path(), "cat >/dev/null\nsleep 0.4\nexit 1");
    let mut spec = read_file_spec();
    spec.limits.time_limit = Duration::from_millis(250);
    let outcome = run_retrying(|| runner.execute(&spec));
    assert_eq!(
        outcome,
        RunOutcome::Failed {
            message: "timed out after 0.25 s".into(),
            failure: Some(ToolFailure::TimeLimit),
        }
    );
}

/// A fake systemd-run that ends like the real one (src/run/run.c, without `--quiet`): its
/// first line, the tool's stderr, then the summary with systemd's RESULT and MAIN line.
fn ends_with(result: &str, main: &str, tool_stderr: &str, exit: u8) -> String {
    format!(
        "cat >/dev/null\n\
         echo 'Running as unit: boxmaker-tool-chat-7-3.service; invocation ID: 0123456789abcdef0123456789abcdef' >&2\n\
         echo '{tool_stderr}' >&2\n\
         echo 'Finished with result: {result}' >&2\n\
         echo 'Main processes terminated with: {main}' >&2\n\
         echo 'Service runtime: 1.021s' >&2\n\
         exit {exit}"
    )
}

#[test]
fn the_units_result_types_the_failure_whatever_the_exit_status() {
    let unit = "the tool unit boxmaker-tool-chat-7-3";
    // oom-kill, timeout and a tool's own `exit 1` all make systemd-run exit 1.
    let cases = [
        (
            ends_with("oom-kill", "code=killed, status=9/KILL", "allocating", 1),
            format!("{unit} ran out of memory (stopped at its MemoryMax=); stderr: allocating"),
            ToolFailure::OutOfMemory,
        ),
        (
            ends_with("timeout", "code=killed, status=15/TERM", "sleeping", 1),
            "timed out after 30 s".to_owned(),
            ToolFailure::TimeLimit,
        ),
        (
            ends_with("exit-code", "code=exited, status=1/FAILURE", "no luck", 1),
            format!("{unit} exited with status 1; stderr: no luck"),
            ToolFailure::Exited { status: 1 },
        ),
        (
            ends_with("signal", "code=killed, status=9/KILL", "bye", 255),
            format!("{unit} was killed by signal SIGKILL; stderr: bye"),
            ToolFailure::Signal {
                signal: Some("SIGKILL".into()),
            },
        ),
    ];
    for (body, message, failure) in cases {
        let dir = Scratch::new("fake-result");
        let runner = fake(dir.path(), &body);
        assert_eq!(
            run_retrying(|| runner.execute(&read_file_spec())),
            RunOutcome::Failed {
                message,
                failure: Some(failure)
            }
        );
    }
}

#[test]
fn a_hung_systemd_run_is_killed_and_its_unit_stopped() {
    let dir = Scratch::new("fake-hung");
    let runner = fake(dir.path(), "sleep 60");
    let mut spec = read_file_spec();
    spec.limits.time_limit = Duration::from_millis(100);
    let started = Instant::now();
    let outcome = run_retrying(|| runner.execute(&spec));
    assert_eq!(
        outcome,
        RunOutcome::Failed {
            message: "timed out after 0.1 s".into(),
            failure: Some(ToolFailure::TimeLimit),
        }
    );
    // brokerd's deadline is the limit plus the start-up grace.
    assert!(started.elapsed() >= Duration::from_secs(5));
    assert!(started.elapsed() < Duration::from_secs(20));
    let log = std::fs::read_to_string(dir.path().join("systemctl.log")).expect("systemctl ran");
    assert_eq!(
        log,
        "--no-ask-password kill --signal=SIGKILL boxmaker-tool-chat-7-3.service\n\
         --no-ask-password stop --no-block boxmaker-tool-chat-7-3.service\n"
    );
}

#[test]
fn a_tool_killed_inside_its_unit_is_reported_as_such() {
    let dir = Scratch::new("fake-signal");
    let runner = fake(
        dir.path(),
        "cat >/dev/null\necho 'tool crashed' >&2\nexit 255",
    );
    match run_retrying(|| runner.execute(&read_file_spec())) {
        RunOutcome::Failed { message, .. } => assert_eq!(
            message,
            "the tool unit boxmaker-tool-chat-7-3 was killed by a signal \
             (systemd-run exit status 255); stderr: tool crashed"
        ),
        other => panic!("expected a failure, got {other:?}"),
    }
}
