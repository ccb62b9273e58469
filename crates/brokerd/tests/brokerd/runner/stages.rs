//! The hands' stages through the runner's doors (docs/decisions.md H14): a write's decision
//! lets the runner look at exactly its target, through one of its grant's roots, read-only,
//! and then commit exactly its write; a run's decision runs exactly its arguments with its
//! grant's binds. Anything else starts nothing.

use std::path::PathBuf;

use brokerd::policy::{self, Decision, SessionView};
use brokerd::run::hands::{StageSpec, StageUnit};
use brokerd::run::runner::{DirectRunner, RunOutcome, RunSpec, Runner};
use proto::Hash32;
use proto::toolrun::ToolInvocation;
use proto::tools::stage::{Commit, Found, Look, RunStage, StageInvocation, Target, WriteCall};
use proto::tools::{RunArgs, ToolArgs, WriteFileArgs, WriteMode};

use super::{Scratch, direct, limits};

fn decide(grant: &str, call: &ToolArgs) -> Decision {
    let snapshot = grants::Snapshot::from_texts(
        [("g".to_owned(), (PathBuf::from("g.toml"), grant.to_owned()))]
            .into_iter()
            .collect(),
    )
    .expect("grants");
    let session = SessionView {
        taint: proto::DataClass::Public,
        untrusted: false,
    };
    policy::decide(&snapshot, call, session, proto::Timestamp::now())
}

const WRITE: &str = "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                     [constraints]\npaths = [\"/srv/notes\"]\n";

fn write_args(path: &str) -> WriteFileArgs {
    WriteFileArgs {
        content: "x\n".into(),
        mode: WriteMode::Replace,
        path: path.into(),
    }
}

fn spec(call: ToolArgs, invocation: StageInvocation, unit: StageUnit) -> RunSpec {
    RunSpec {
        unit: "boxmaker-tool-chat-7-1".into(),
        invocation: ToolInvocation {
            call,
            max_bytes: 1024,
            roots: Vec::new(),
            addresses: Vec::new(),
            consult: None,
            timeout_ms: 30_000,
            notes: None,
            index: Vec::new(),
        },
        bind: None,
        write_bind: None,
        index_binds: Vec::new(),
        addresses: Vec::new(),
        secret: None,
        limits: limits(),
        stage: Some(StageSpec { invocation, unit }),
        mcp: None,
    }
}

fn target(root: &str, path: &str) -> Target {
    Target {
        root: root.into(),
        path: path.into(),
    }
}

fn look(root: &str, path: &str, writable: bool) -> (StageInvocation, StageUnit) {
    (
        StageInvocation::Look(Look {
            target: target(root, path),
        }),
        StageUnit::Write {
            root: root.into(),
            writable,
        },
    )
}

fn commit(
    root: &str,
    path: &str,
    args: WriteFileArgs,
    writable: bool,
) -> (StageInvocation, StageUnit) {
    (
        StageInvocation::Commit(Commit {
            target: target(root, path),
            call: WriteCall::WriteFile(args),
            old: Found::Absent,
            new: Hash32::ZERO,
        }),
        StageUnit::Write {
            root: root.into(),
            writable,
        },
    )
}

/// A runner whose tool marks that it was started, and answers a stage.
fn marking(dir: &Scratch) -> (Runner, PathBuf) {
    let ran = dir.path().join("ran");
    let tool = direct::script(
        dir.path(),
        "tool",
        &format!(
            "touch {}\nprintf '%s' '{{\"status\":\"looked\"}}'",
            ran.display()
        ),
    );
    (Runner::Direct(DirectRunner { tool }), ran)
}

fn refused(outcome: RunOutcome) -> bool {
    matches!(outcome, RunOutcome::Failed { message, .. } if message.starts_with("internal: refusing"))
}

#[test]
fn a_writes_decision_looks_at_and_commits_only_its_own_target() {
    let dir = Scratch::new("stages");
    let (runner, ran) = marking(&dir);
    let call = ToolArgs::WriteFile(write_args("/srv/notes/a.md"));
    let decision = decide(WRITE, &call);
    let other = write_args("/srv/notes/b.md");
    let cases: Vec<(&str, (StageInvocation, StageUnit))> = vec![
        ("another file", look("/srv/notes", "b.md", false)),
        (
            "through a wider root than granted",
            look("/srv", "notes/a.md", false),
        ),
        ("a look bound writable", look("/srv/notes", "a.md", true)),
    ];
    for (why, (invocation, unit)) in cases {
        let s = spec(call.clone(), invocation, unit);
        assert!(refused(runner.look(&decision, &s)), "a look at {why} ran");
    }
    // A commit is no look, and a look no commit.
    let (invocation, unit) = commit("/srv/notes", "a.md", write_args("/srv/notes/a.md"), true);
    assert!(refused(
        runner.look(&decision, &spec(call.clone(), invocation, unit))
    ));
    // Nor a look that is also an MCP session (its unit's properties are not a look's).
    let (invocation, unit) = look("/srv/notes", "a.md", false);
    let mut with_mcp = spec(call.clone(), invocation, unit);
    with_mcp.mcp = super::mcp::any_session();
    assert!(refused(runner.look(&decision, &with_mcp)));
    assert!(!ran.exists(), "a tool was started");
    // The control: the look at its own target runs.
    let (invocation, unit) = look("/srv/notes", "a.md", false);
    let s = spec(call.clone(), invocation, unit);
    let outcome = direct::run_retrying(|| runner.look(&decision, &s));
    assert!(matches!(outcome, RunOutcome::Staged(_)), "{outcome:?}");
    assert!(ran.exists());
    std::fs::remove_file(&ran).expect("rm");

    let commits: Vec<(&str, (StageInvocation, StageUnit))> = vec![
        ("another write", commit("/srv/notes", "a.md", other, true)),
        (
            "bound read-only",
            commit("/srv/notes", "a.md", write_args("/srv/notes/a.md"), false),
        ),
        (
            "through a wider root",
            commit("/srv", "notes/a.md", write_args("/srv/notes/a.md"), true),
        ),
        ("a look", look("/srv/notes", "a.md", false)),
    ];
    for (why, (invocation, unit)) in commits {
        let decision = decide(WRITE, &call);
        let s = spec(call.clone(), invocation, unit);
        assert!(refused(runner.run(decision, &s)), "a commit of {why} ran");
    }
    assert!(!ran.exists(), "a tool was started");
    let (invocation, unit) = commit("/srv/notes", "a.md", write_args("/srv/notes/a.md"), true);
    let s = spec(call.clone(), invocation, unit);
    let outcome = direct::run_retrying(|| runner.run(decide(WRITE, &call), &s));
    assert!(matches!(outcome, RunOutcome::Staged(_)), "{outcome:?}");
}

#[test]
fn a_runs_decision_runs_only_its_arguments_with_its_grants_binds() {
    let dir = Scratch::new("stages-run");
    let (runner, ran) = marking(&dir);
    let grant = "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
                 programs = [\"python3\"]\npatterns = [\"-V\", \"-c\"]\npaths = [\"/srv/scripts\"]\n";
    let args = RunArgs {
        args: vec!["-V".into()],
        program: "python3".into(),
        stdin: None,
    };
    let call = ToolArgs::Run(args);
    let stage = |argv: &[&str], paths: &[&str], workdir: Option<&str>| {
        (
            StageInvocation::Run(RunStage {
                program: "/usr/bin/python3".into(),
                args: argv.iter().map(|a| (*a).to_owned()).collect(),
                stdin: None,
                workdir: "/work".into(),
                timeout_ms: 1000,
                max_output: 1024,
            }),
            StageUnit::Run {
                program: "/usr/bin/python3".into(),
                closure: None,
                paths: paths.iter().map(|p| (*p).to_owned()).collect(),
                workdir: workdir.map(str::to_owned),
            },
        )
    };
    for (why, (invocation, unit)) in [
        ("other arguments", stage(&["-c"], &["/srv/scripts"], None)),
        ("another path bound", stage(&["-V"], &["/srv"], None)),
        (
            "a working directory the grant lacks",
            stage(&["-V"], &["/srv/scripts"], Some("/srv")),
        ),
    ] {
        let s = spec(call.clone(), invocation, unit);
        assert!(refused(runner.run(decide(grant, &call), &s)), "{why} ran");
    }
    assert!(!ran.exists(), "a tool was started");
    let (invocation, unit) = stage(&["-V"], &["/srv/scripts"], None);
    let s = spec(call.clone(), invocation, unit);
    let outcome = direct::run_retrying(|| runner.run(decide(grant, &call), &s));
    assert!(matches!(outcome, RunOutcome::Staged(_)), "{outcome:?}");
}
