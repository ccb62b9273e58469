//! The hands through the real binary: a stage in, one `StageOutput` out (a look, a commit,
//! and the run executor's typed ends, caps and deadline), and a hands tool sent as a plain
//! invocation refused.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proto::Hash32;
use proto::tools::stage::{
    Captured, Found, RunEnd, RunReport, RunStage, StageFailure, StageInvocation, StageOutput,
    Target, WriteCall,
};
use proto::tools::{RunArgs, ToolArgs, WriteFileArgs, WriteMode};

use crate::support::{TempDir, failed, invocation, run};

fn stage_raw(input: &[u8]) -> StageOutput {
    let mut child = Command::new(env!("CARGO_BIN_EXE_boxmaker-tool"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn boxmaker-tool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "exit {:?}", out.status);
    serde_json::from_slice(&out.stdout).expect("stdout is one StageOutput")
}

fn stage(s: &StageInvocation) -> StageOutput {
    stage_raw(&serde_json::to_vec(s).expect("encode"))
}

fn sh(script: &str, stdin: Option<&str>, timeout_ms: u64, max: u64) -> RunReport {
    let out = stage(&StageInvocation::Run(RunStage {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        stdin: stdin.map(str::to_owned),
        workdir: "/".into(),
        timeout_ms,
        max_output: max,
    }));
    match out {
        StageOutput::Ran { report } => report,
        other => panic!("{script}: {other:?}"),
    }
}

fn text(t: &str) -> Captured {
    Captured {
        text: t.into(),
        bytes: t.len() as u64,
        truncated: false,
    }
}

#[test]
fn a_run_reports_how_it_ended_with_both_streams() {
    assert_eq!(
        sh("echo out; echo err >&2", None, 10_000, 1024),
        RunReport {
            end: RunEnd::Exited { status: 0 },
            stdout: text("out\n"),
            stderr: text("err\n"),
        }
    );
    assert_eq!(
        sh("exit 3", None, 10_000, 1024).end,
        RunEnd::Exited { status: 3 }
    );
    assert_eq!(
        sh("kill -SEGV $$", None, 10_000, 1024).end,
        RunEnd::Signal {
            signal: "SIGSEGV".into()
        }
    );
    assert_eq!(
        sh("cat", Some("fed in"), 10_000, 1024).stdout,
        text("fed in")
    );
    // No stdin given: the program reads an empty input, never the tool's own.
    assert_eq!(sh("cat", None, 10_000, 1024).stdout, text(""));
}

#[test]
fn output_past_the_cap_is_drained_counted_and_marked() {
    let r = sh("head -c 300000 /dev/zero | tr '\\0' x", None, 10_000, 1000);
    assert_eq!(r.end, RunEnd::Exited { status: 0 });
    assert_eq!(r.stdout.text, "x".repeat(1000));
    assert_eq!((r.stdout.bytes, r.stdout.truncated), (300_000, true));
}

#[test]
fn the_deadline_kills_the_whole_group() {
    let started = Instant::now();
    let r = sh("sleep 30 & sleep 30", None, 300, 1024);
    assert_eq!(r.end, RunEnd::TimeLimit);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // A program that ends while a child of its group holds the pipes: the run ends too.
    let started = Instant::now();
    let r = sh("sleep 30 & echo done", None, 20_000, 1024);
    assert_eq!(r.end, RunEnd::Exited { status: 0 });
    assert_eq!(r.stdout, text("done\n"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_run_gets_a_small_fixed_environment_and_its_working_directory() {
    let dir = TempDir::new();
    let out = stage(&StageInvocation::Run(RunStage {
        program: "/usr/bin/env".into(),
        args: vec![],
        stdin: None,
        workdir: dir.s(""),
        timeout_ms: 10_000,
        max_output: 4096,
    }));
    let StageOutput::Ran { report } = out else {
        panic!("{out:?}")
    };
    let mut keys: Vec<&str> = report
        .stdout
        .text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["HOME", "LANG", "PATH", "TMPDIR"]);
    assert!(report.stdout.text.contains(&format!("HOME={}", dir.s(""))));
    let pwd = sh("pwd", None, 10_000, 1024);
    assert_eq!(pwd.stdout, text("/\n"));
    let missing = stage(&StageInvocation::Run(RunStage {
        program: dir.s("no-such-program"),
        args: vec![],
        stdin: None,
        workdir: "/".into(),
        timeout_ms: 1000,
        max_output: 10,
    }));
    assert!(
        matches!(
            missing,
            StageOutput::Failed {
                failure: StageFailure::Spawn,
                ..
            }
        ),
        "{missing:?}"
    );
}

#[test]
fn look_and_commit_through_the_binary() {
    let dir = TempDir::new();
    std::fs::create_dir(dir.path("root")).expect("root");
    std::fs::write(dir.path("root/a.md"), "old\n").expect("file");
    let target = Target {
        root: dir.s("root"),
        path: "a.md".into(),
    };
    let looked = stage(&StageInvocation::Look(proto::tools::stage::Look {
        target: target.clone(),
    }));
    let StageOutput::Looked { file: Some(file) } = looked else {
        panic!("{looked:?}")
    };
    assert_eq!(
        (file.text.as_str(), file.sha256),
        ("old\n", Hash32::digest(b"old\n"))
    );
    let call = WriteCall::WriteFile(WriteFileArgs {
        content: "new\n".into(),
        mode: WriteMode::Replace,
        path: "/granted/a.md".into(),
    });
    let out = stage(&StageInvocation::Commit(proto::tools::stage::Commit {
        target,
        call,
        old: Found::Sha256(file.sha256),
        new: Hash32::digest(b"new\n"),
    }));
    assert!(
        matches!(out, StageOutput::Committed { size: 4, .. }),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path("root/a.md")).expect("read"),
        "new\n"
    );
    let bad = stage_raw(br#"{"stage":"look","target":{"root":"/","path":"x"},"more":1}"#);
    assert!(
        matches!(
            bad,
            StageOutput::Failed {
                failure: StageFailure::Invocation,
                ..
            }
        ),
        "{bad:?}"
    );
}

#[test]
fn a_hands_tool_as_a_plain_invocation_is_refused() {
    let dir = TempDir::new();
    for call in [
        ToolArgs::WriteFile(WriteFileArgs {
            content: "x".into(),
            mode: WriteMode::Create,
            path: dir.s("created"),
        }),
        ToolArgs::Run(RunArgs {
            args: vec![],
            program: "true".into(),
            stdin: None,
        }),
    ] {
        let mut inv = invocation(call);
        inv.roots = vec![dir.s("")];
        failed(run(&inv, None), "runs only as the stages brokerd sends");
    }
    assert!(!dir.path("created").exists());
}
